#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "util/atomic_file.h"
#include "util/process.h"

namespace cc::util {

std::optional<std::string> process_start_time(long pid) {
  if (pid <= 0) return std::nullopt;
  auto stat = read_file(fmt::format("/proc/{}/stat", pid), 1 << 16);
  if (!stat) return std::nullopt;
  // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses; fields resume after the
  // last ')'. starttime is field 22, the 20th after it.
  size_t at = stat->rfind(')');
  if (at == std::string::npos) return std::nullopt;
  std::vector<std::string_view> fields;
  std::string_view rest = std::string_view(*stat).substr(at + 1);
  while (!rest.empty()) {
    size_t sp = rest.find_first_of(" \n");
    if (sp != 0) fields.push_back(rest.substr(0, sp));
    if (sp == std::string_view::npos) break;
    rest.remove_prefix(sp + 1);
  }
  if (fields.size() < 20) return std::nullopt;
  const std::string ticks(fields[19]);  // fields[0] is field 3 (state)
  // The tick count restarts at boot: the boot id tells two boots apart.
  auto boot = read_file("/proc/sys/kernel/random/boot_id", 4096);
  std::string id = boot ? *boot : "";
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return fmt::format("linux:{}:{}", id, ticks);
}

std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

bool cloexec_pipe(int (&fds)[2]) {
  return ::pipe2(fds, O_CLOEXEC) == 0;
}

}  // namespace cc::util
