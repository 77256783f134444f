#include "provision/soft_roce.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "discovery/command_outcome.h"
#include "provision/network_apply.h"
#include "provision/rdma_probe.h"
#include "remote/quote.h"
#include "topology/graph.h"
#include "topology/rdma_port.h"

namespace cc::provision {
namespace {

using util::ExitCode;

util::Error failed(const remote::Executor& ex, std::string message) {
  return util::error(ExitCode::kCheckFailed, fmt::format("{}: {}", ex.host(), message));
}

std::string first_line(const std::string& text) {
  std::string s = text.substr(0, text.find('\n'));
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

util::Result<discovery::RdmaLinks> read_links(remote::Executor& ex,
                                              std::chrono::milliseconds timeout) {
  auto r = run_probe(ex, {"rdma", "-j", "link"}, timeout);
  if (!r) return r.error();
  if (r->exit_status == -1)
    return failed(ex, fmt::format("`rdma -j link` did not run: {}", r->err));
  if (!discovery::is_no_rdma_subsystem(r->err) &&
      discovery::classify_command(r->exit_status, r->err) == discovery::CommandOutcome::kMissing) {
    return failed(ex, "the `rdma` tool is not installed: install iproute2 (it ships `rdma`)");
  }
  auto links = discovery::parse_rdma_link(r->out, r->err, r->exit_status);
  if (!links) return discovery::for_host(ex.host(), links.error());
  return links;
}

const discovery::RdmaDevice* device_on(const discovery::RdmaLinks& links, const std::string& itf) {
  for (const auto& d : links.devices) {
    if (d.netdev == itf) return &d;
  }
  return nullptr;
}

util::Status run_step(remote::Executor& ex, Privilege p, const std::vector<std::string>& argv,
                      std::chrono::milliseconds timeout) {
  auto r = run_probe(ex, with_privilege(p, argv), timeout);
  if (!r) return r.error();
  if (r->exit_status == 0) return {};
  const std::string line = remote::shell_quote(argv);
  const std::string why = first_line(r->err.empty() ? r->out : r->err);
  if (r->exit_status == -1) return failed(ex, fmt::format("`{}` did not finish: {}", line, why));
  const bool modprobe = argv.front() == "modprobe";
  if (discovery::classify_command(r->exit_status, r->err) == discovery::CommandOutcome::kMissing) {
    return failed(ex, fmt::format("`{}` is not installed ({}): install {}", argv.front(), why,
                                  modprobe ? "kmod" : "iproute2"));
  }
  if (modprobe && r->err.find("not found") != std::string::npos) {
    return failed(ex,
                  fmt::format("the kernel module rdma_rxe is missing ({}): install the running "
                              "kernel's RDMA modules (Debian: its linux-image package ships "
                              "rdma_rxe; Ubuntu: linux-modules-extra-$(uname -r)), or use a kernel "
                              "built with CONFIG_RDMA_RXE",
                              why));
  }
  return failed(ex, fmt::format("`{}` failed (exit status {}): {}", line, r->exit_status, why));
}

}  // namespace

std::vector<std::string> cabled_interfaces(const discovery::ClusterState& state,
                                           const std::string& host) {
  topology::ClusterGraph g(state);
  std::vector<std::string> out;
  auto hi = g.host_index(host);
  if (!hi) return out;
  for (const auto& p : g.host(*hi).ports) {
    if (p.end.interface.empty() || !topology::cabled_peer(g, *hi, p)) continue;
    if (std::find(out.begin(), out.end(), p.end.interface) == out.end()) {
      out.push_back(p.end.interface);
    }
  }
  return out;
}

std::string rxe_device_name(const std::string& interface) {
  return "rxe_" + interface;
}

SoftRocePlan plan_soft_roce(const std::string& host, const std::vector<std::string>& interfaces,
                            const discovery::RdmaLinks& links) {
  SoftRocePlan plan;
  plan.host = host;
  for (const auto& itf : interfaces) {
    if (const auto* d = device_on(links, itf)) {
      plan.present.push_back(fmt::format("{} ({})", itf, d->name));
    } else {
      plan.add.push_back(itf);
    }
  }
  if (plan.add.empty()) return plan;
  plan.commands.push_back({"modprobe", "rdma_rxe"});
  for (const auto& itf : plan.add) {
    plan.commands.push_back(
        {"rdma", "link", "add", rxe_device_name(itf), "type", "rxe", "netdev", itf});
  }
  return plan;
}

util::Result<SoftRocePlan> create_soft_roce(remote::Executor& ex,
                                            const std::vector<std::string>& interfaces,
                                            bool dry_run, std::chrono::milliseconds timeout,
                                            const discovery::FixCommand& fix) {
  auto links = read_links(ex, timeout);
  if (!links) return links.error();
  SoftRocePlan plan = plan_soft_roce(ex.host(), interfaces, *links);
  if (plan.commands.empty() || dry_run) return plan;

  auto privilege = detect_privilege(ex);
  if (!privilege) return privilege.error();
  if (*privilege == Privilege::kNone) {
    std::vector<std::string> lines;
    for (const auto& c : plan.commands) lines.push_back("sudo " + remote::shell_quote(c));
    return failed(ex, fmt::format("neither root nor passwordless sudo: run these on {} "
                                  "yourself, then run `{}` again:\n  {}",
                                  ex.host(), fix.command("rdma status"), fmt::join(lines, "\n  ")));
  }
  for (const auto& c : plan.commands) {
    if (auto st = run_step(ex, *privilege, c, timeout); !st) return st.error();
  }
  auto after = read_links(ex, timeout);
  if (!after) return after.error();
  for (const auto& itf : plan.add) {
    if (device_on(*after, itf) == nullptr) {
      return failed(ex, fmt::format("`rdma link add {} ...` succeeded but `rdma -j link` lists "
                                    "no device on {}",
                                    rxe_device_name(itf), itf));
    }
  }
  return plan;
}

}  // namespace cc::provision
