#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace cc::util {
namespace {

Error os_error(const std::filesystem::path& path, std::string_view what, int err) {
  return error(ExitCode::kUsage,
               fmt::format("{}: cannot {}: {}", path.string(), what, std::strerror(err)));
}

// Closes a descriptor and unlinks the temporary file unless released.
class TempFile {
 public:
  TempFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  int close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  void release() { path_.clear(); }

 private:
  int fd_;
  std::string path_;
};

}  // namespace

Status write_file_atomic(const std::filesystem::path& path, std::string_view content,
                         unsigned mode) {
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return os_error(dir, "create directory", ec.value());
    ::chmod(dir.c_str(), 0700);
  }
  std::string tmpl = (dir / fmt::format(".{}.tmp.XXXXXX", path.filename().string())).string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return os_error(path, "create a temporary file beside", errno);
  TempFile tmp(fd, tmpl);
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(tmp.fd(), p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return os_error(path, "write", errno);
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fchmod(tmp.fd(), static_cast<mode_t>(mode)) != 0) return os_error(path, "chmod", errno);
  if (::fsync(tmp.fd()) != 0) return os_error(path, "fsync", errno);
  if (tmp.close() != 0) return os_error(path, "close", errno);
  if (::rename(tmpl.c_str(), path.c_str()) != 0) return os_error(path, "rename into place", errno);
  tmp.release();
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

Result<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return os_error(path, "read", errno ? errno : ENOENT);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace cc::util
