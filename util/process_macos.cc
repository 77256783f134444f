#include <fcntl.h>
#include <sys/sysctl.h>
#include <sys/types.h>
#include <unistd.h>

#include <string>

#include <fmt/format.h>

#include "util/process.h"

namespace cc::util {

std::optional<std::string> process_start_time(long pid) {
  if (pid <= 0) return std::nullopt;
  int mib[4] = {CTL_KERN, KERN_PROC, KERN_PROC_PID, static_cast<int>(pid)};
  struct kinfo_proc info {};
  size_t size = sizeof info;
  if (::sysctl(mib, 4, &info, &size, nullptr, 0) != 0 || size == 0) return std::nullopt;
  if (info.kp_proc.p_pid != static_cast<pid_t>(pid)) return std::nullopt;
  const struct timeval& t = info.kp_proc.p_starttime;
  return fmt::format("darwin:{}.{:06}", static_cast<long long>(t.tv_sec),
                     static_cast<long long>(t.tv_usec));
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

bool cloexec_pipe(int (&fds)[2]) {
  if (::pipe(fds) != 0) return false;
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);
  return true;
}

}  // namespace cc::util
