#include "lab/commands.h"

#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "remote/quote.h"

namespace cc::lab {
namespace {

// Debian packages of the programs the lab runs, for "command not found".
std::string package_hint(const std::string& program) {
  static const std::map<std::string, std::string> packages{{"ip", "iproute2"},
                                                           {"ssh-keygen", "openssh-client"},
                                                           {"/usr/sbin/sshd", "openssh-server"},
                                                           {"unshare", "util-linux"},
                                                           {"nsenter", "util-linux"},
                                                           {"hostname", "hostname"}};
  auto it = packages.find(program);
  return it == packages.end() ? std::string()
                              : fmt::format(" (install it: apt-get install {})", it->second);
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

util::Result<remote::CommandResult> run_checked(remote::Executor& local,
                                                const std::vector<std::string>& argv,
                                                std::chrono::milliseconds timeout,
                                                std::optional<std::string> input,
                                                util::ExitCode failure_code) {
  remote::RunOptions opts;
  opts.timeout = timeout;
  opts.stdin_data = std::move(input);
  auto r = local.run(remote::Command{argv, false}, opts);
  if (!r) return r.error();
  const std::string line = remote::shell_quote(argv);
  if (r->timed_out) {
    return util::error(failure_code, fmt::format("`{}` timed out after {:.3g} s", line,
                                                 static_cast<double>(timeout.count()) / 1000.0));
  }
  if (r->exit_status == 127 && !argv.empty()) {
    return util::error(failure_code,
                       fmt::format("`{}`: {} not found{}", line, argv[0], package_hint(argv[0])));
  }
  if (r->exit_status != 0) {
    std::string err = trimmed(r->err);
    if (err.empty()) err = trimmed(r->out);
    return util::error(failure_code, fmt::format("`{}` failed (exit status {}){}{}", line,
                                                 r->exit_status, err.empty() ? "" : ": ", err));
  }
  return r;
}

util::Result<std::vector<Link>> parse_ip_links(std::string_view json) {
  auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array()) {
    return util::error(util::ExitCode::kUsage,
                       "cannot read the output of `ip -j link show`: not a JSON list");
  }
  std::vector<Link> links;
  for (const auto& l : j) {
    if (!l.is_object()) continue;
    links.push_back({l.value("ifname", std::string()), l.value("ifalias", std::string()),
                     l.value("operstate", std::string())});
  }
  return links;
}

util::Result<std::vector<Link>> list_links(remote::Executor& local, const std::string& netns) {
  std::vector<std::string> argv{"ip", "-j", "link", "show"};
  if (!netns.empty()) argv.insert(argv.begin() + 1, {"-n", netns});
  auto r = run_checked(local, argv, std::chrono::seconds(30));
  if (!r) return r.error();
  return parse_ip_links(r->out);
}

}  // namespace cc::lab
