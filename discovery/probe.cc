#include "discovery/probe.h"

#include <random>

#include <fmt/format.h>

#include "discovery/ibv_devices.h"
#include "discovery/ibv_devinfo.h"
#include "discovery/linux_facts.h"
#include "discovery/linux_rdma.h"
#include "discovery/linux_sysfs.h"
#include "discovery/linux_system.h"
#include "discovery/machine_id.h"
#include "discovery/macos_ifconfig.h"
#include "discovery/macos_networksetup.h"
#include "discovery/macos_system.h"
#include "discovery/macos_thunderbolt.h"
#include "discovery/text.h"
#include "remote/quote.h"
#include "remote/replay_executor.h"
#include "util/atomic_file.h"

namespace cc::discovery {
namespace {

// A command whose line is also its argv, split on spaces (no quoting needed).
ProbeCommand words(std::string_view line) {
  ProbeCommand c;
  c.line = std::string(line);
  for (auto w : split_words(line)) c.argv.emplace_back(w);
  return c;
}

ProbeCommand shell(std::string_view line) {
  return ProbeCommand{std::string(line), {"sh", "-c", std::string(line)}};
}

std::string marker(std::string_view nonce) {
  return fmt::format("@@clusterctl-{}@@", nonce);
}

// The script's lines that run and print one command.
std::string run_line(const ProbeCommand& c) {
  return fmt::format("r {} {}", c.key(), remote::shell_quote(c.argv));
}

std::string command_block(const std::vector<ProbeCommand>& commands, bool parallel) {
  std::string s;
  // Each background command's pid goes into $p, for the EXIT trap to end them before it
  // removes $d (a command still writing there would make the removal fail, or recreate files).
  for (const auto& c : commands) {
    s += run_line(c) + (parallel ? " & p=\"$p $!\"\n" : "; e " + c.key() + "\n");
  }
  if (parallel) {
    s += "wait\n";
    for (const auto& c : commands) s += "e " + c.key() + "\n";
  }
  return s;
}

util::Error probe_error(std::string_view host, std::string_view what) {
  return util::Error{util::ExitCode::kCheckFailed, fmt::format("{}: {}", host, what)};
}

RawOutput missing_output(const ProbeCommand& c) {
  return RawOutput{"", fmt::format("{}: not recorded", c.line), 127};
}

}  // namespace

std::string ProbeCommand::key() const {
  return remote::replay_key(remote::Command{argv, false});
}

ProbeCommand uname_command() {
  return words("uname -s");
}

ProbeCommand ssh_connection_command() {
  return words("printenv SSH_CONNECTION");
}

std::vector<ProbeCommand> probe_commands(ProbeOs os) {
  std::vector<ProbeCommand> c{uname_command(), ssh_connection_command()};
  if (os == ProbeOs::kMacos) {
    for (auto line : {kSwVersCommand, kSysctlCommand, kSystemProfilerCommand, kNetworksetupCommand,
                      kIfconfigCommand, kRdmaCtlCommand, kIbvDevicesCommand, kIbvDevinfoCommand,
                      kIoregPlatformCommand}) {
      c.push_back(words(line));
    }
  } else {
    for (auto line : {kOsReleaseCommand, kMeminfoCommand, kProductNameCommand,
                      kIpDetailAddrCommand, kRdmaLinkCommand}) {
      c.push_back(words(line));
    }
    c.push_back(ProbeCommand{std::string(kCpuModelCommand),
                             {"grep", "-m", "1", "^model name", "/proc/cpuinfo"}});
    c.push_back(shell(kSysfsThunderboltCommand));
    c.push_back(shell(kSysfsInfinibandCommand));
    c.push_back(words(kMachineIdCommand));
    c.push_back(words(kDbusMachineIdCommand));
  }
  return c;
}

const RawOutput* ProbeOutputs::find(const ProbeCommand& cmd) const {
  auto it = by_key.find(cmd.key());
  return it == by_key.end() ? nullptr : &it->second;
}

std::string probe_script(std::string_view nonce, const std::vector<ProbeCommand>& commands,
                         bool parallel, bool os_switch, const ProbeExtras& extras) {
  std::string s = fmt::format(
      "M='{}'\n"
      // Removed however the script ends: done, interrupted (clusterctl sends TERM to the
      // script's process group first, KILL only after a grace period: remote/ssh_executor.cc),
      // or left alone by a controller that is gone (sshd closes the channel: the next write
      // raises SIGPIPE). The EXIT trap ignores further signals so that a second TERM (one to
      // the shell, one to its group) cannot cut the cleanup short.
      "p= d=\n"
      "trap 'trap \"\" HUP INT TERM PIPE; [ -z \"$p\" ] || kill $p 2>/dev/null; wait; "
      "[ -z \"$d\" ] || rm -rf \"$d\"' EXIT\n"
      "trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 141' PIPE\n"
      "d=$(mktemp -d \"${{TMPDIR:-/tmp}}/clusterctl-probe.XXXXXX\") || exit 125\n"
      "r() {{ k=$1; shift; \"$@\" </dev/null >\"$d/$k.o\" 2>\"$d/$k.e\"; echo $? >\"$d/$k.s\"; }}\n"
      "e() {{ printf '%s out %s\\n' \"$M\" \"$1\"; cat \"$d/$1.o\"; "
      "printf '\\n%s err %s\\n' \"$M\" \"$1\"; cat \"$d/$1.e\"; "
      "printf '\\n%s exit %s %s\\n' \"$M\" \"$1\" \"$(cat \"$d/$1.s\")\"; }}\n",
      marker(nonce));
  if (!os_switch) return s + command_block(commands, parallel);
  auto uname = uname_command();
  auto rest = [&](ProbeOs os) {
    auto list = probe_commands(os);
    list.erase(list.begin());  // uname ran already
    list.insert(list.begin(), extras.first.begin(), extras.first.end());
    const auto& own = os == ProbeOs::kMacos ? extras.on_macos : extras.on_linux;
    list.insert(list.end(), own.begin(), own.end());
    list.insert(list.end(), extras.last.begin(), extras.last.end());
    return list;
  };
  s += run_line(uname) + "; e " + uname.key() + "\n";
  s += fmt::format("case $(cat \"$d/{}.o\") in\nDarwin)\n{};;\nLinux)\n{};;\nesac\n", uname.key(),
                   command_block(rest(ProbeOs::kMacos), false),
                   command_block(rest(ProbeOs::kLinux), false));
  return s;
}

util::Result<ProbeOutputs> split_probe_output(std::string_view host, std::string_view out,
                                              std::string_view nonce) {
  const std::string m = marker(nonce);
  ProbeOutputs result;
  size_t pos = out.find(m + " out ");
  while (pos != std::string_view::npos) {
    size_t key_begin = pos + m.size() + 5;
    size_t key_end = out.find('\n', key_begin);
    if (key_end == std::string_view::npos) {
      return probe_error(host, "probe output ends inside a section header (cut short?)");
    }
    std::string key(out.substr(key_begin, key_end - key_begin));
    std::string err_marker = fmt::format("\n{} err {}\n", m, key);
    std::string exit_marker = fmt::format("\n{} exit {} ", m, key);
    size_t err_at = out.find(err_marker, key_end + 1);
    size_t exit_at = err_at == std::string_view::npos ? err_at : out.find(exit_marker, err_at);
    if (exit_at == std::string_view::npos) {
      return probe_error(host, fmt::format("the output of `{}` is cut short (the probe was "
                                           "killed or timed out)",
                                           key));
    }
    size_t status_begin = exit_at + exit_marker.size();
    size_t status_end = out.find('\n', status_begin);
    if (status_end == std::string_view::npos) status_end = out.size();
    auto status = parse_int(trim(out.substr(status_begin, status_end - status_begin)));
    if (!status) {
      return probe_error(host, fmt::format("the exit status of `{}` is missing", key));
    }
    RawOutput raw;
    raw.out = std::string(out.substr(key_end + 1, err_at - (key_end + 1)));
    size_t err_begin = err_at + err_marker.size();
    raw.err = std::string(out.substr(err_begin, exit_at - err_begin));
    raw.exit_status = *status;
    result.by_key[key] = std::move(raw);
    pos = out.find(m + " out ", status_end);
  }
  return result;
}

std::string make_nonce() {
  std::random_device rd;
  std::uniform_int_distribution<unsigned> dist(0, 0xffff);
  return fmt::format("{:04x}{:04x}{:04x}{:04x}", dist(rd), dist(rd), dist(rd), dist(rd));
}

namespace {

util::Result<ProbeOutputs> run_script(remote::Executor& ex, const std::string& script,
                                      std::string_view nonce, std::chrono::milliseconds timeout) {
  remote::RunOptions opts;
  opts.timeout = timeout;
  opts.what = "the probe";  // in the executor's messages, never the internal script
  auto r = ex.run(remote::Command{{script}, true}, opts);
  if (!r) return r.error();
  if (r->timed_out) {
    return probe_error(ex.host(), fmt::format("the probe did not finish within {} s (raise "
                                              "--timeout, or check the host)",
                                              static_cast<double>(timeout.count()) / 1000.0));
  }
  if (r->exit_status != 0) {
    return probe_error(ex.host(), fmt::format("the probe script exited {}: {}", r->exit_status,
                                              excerpt(trim(r->err), 200)));
  }
  return split_probe_output(ex.host(), r->out, nonce);
}

// kEach: one run() per command. A command the bundle has no recording of is left out (kUsage
// from the replay executor); an unreachable host ends the probe.
util::Result<ProbeOutputs> run_each(remote::Executor& ex, const std::vector<ProbeCommand>& commands,
                                    std::chrono::milliseconds timeout, ProbeOutputs outputs = {}) {
  remote::RunOptions opts;
  opts.timeout = timeout;
  for (const auto& c : commands) {
    auto r = ex.run(remote::Command{c.argv, false}, opts);
    if (!r) {
      if (r.error().code == util::ExitCode::kUsage) continue;
      return r.error();
    }
    outputs.by_key[c.key()] = RawOutput{r->out, r->err, r->exit_status};
  }
  return outputs;
}

std::optional<ProbeOs> os_of(const ProbeOutputs& outputs) {
  const RawOutput* u = outputs.find(uname_command());
  if (!u || u->exit_status != 0) return std::nullopt;
  auto name = trim(u->out);
  if (name == "Darwin") return ProbeOs::kMacos;
  if (name == "Linux") return ProbeOs::kLinux;
  return std::nullopt;
}

util::Status check_os(std::string_view host, const ProbeOutputs& outputs) {
  if (os_of(outputs)) return {};
  const RawOutput* u = outputs.find(uname_command());
  if (!u) return probe_error(host, "`uname -s` gave no output: is this a POSIX host?");
  return probe_error(host, fmt::format("unsupported OS {} (`uname -s`): clusterctl discovers "
                                       "macOS and Linux hosts",
                                       excerpt(trim(u->out))));
}

}  // namespace

util::Result<ProbeOutputs> run_host_probe(remote::Executor& ex, ProbeMode mode,
                                          std::chrono::milliseconds timeout,
                                          const ProbeExtras& extras) {
  util::Result<ProbeOutputs> outputs = ProbeOutputs{};
  if (mode == ProbeMode::kScript) {
    std::string nonce = make_nonce();
    outputs = run_script(ex, probe_script(nonce, {}, false, true, extras), nonce, timeout);
  } else {
    outputs = run_each(ex, {uname_command()}, timeout);
    if (outputs) {
      if (auto os = os_of(*outputs)) {
        auto rest = probe_commands(*os);
        rest.erase(rest.begin());
        rest.insert(rest.begin(), extras.first.begin(), extras.first.end());
        const auto& own = *os == ProbeOs::kMacos ? extras.on_macos : extras.on_linux;
        rest.insert(rest.end(), own.begin(), own.end());
        rest.insert(rest.end(), extras.last.begin(), extras.last.end());
        outputs = run_each(ex, rest, timeout, std::move(*outputs));
      }
    }
  }
  if (!outputs) return outputs;
  if (auto st = check_os(ex.host(), *outputs); !st) return st.error();
  outputs->ssh_host_key = ex.host_key_fingerprint();
  return outputs;
}

util::Result<ProbeOutputs> run_commands(remote::Executor& ex,
                                        const std::vector<ProbeCommand>& commands,
                                        ProbeMode mode, std::chrono::milliseconds timeout) {
  if (commands.empty()) return ProbeOutputs{};
  if (mode == ProbeMode::kEach) return run_each(ex, commands, timeout);
  std::string nonce = make_nonce();
  return run_script(ex, probe_script(nonce, commands, true, false), nonce, timeout);
}

util::Status save_probe_outputs(const std::filesystem::path& dir, const ProbeOutputs& outputs) {
  for (const auto& [key, raw] : outputs.by_key) {
    for (auto [ext, text] : {std::pair<const char*, std::string>{".out", raw.out},
                             {".err", raw.err},
                             {".exit", std::to_string(raw.exit_status) + "\n"}}) {
      if (auto st = util::write_file_atomic(dir / (key + ext), text); !st) return st;
    }
  }
  if (!outputs.ssh_host_key.empty()) {
    return util::write_file_atomic(dir / remote::kHostKeyFile, outputs.ssh_host_key + "\n");
  }
  return {};
}

util::Result<HostFacts> facts_from_probe(std::string_view host, const ProbeOutputs& outputs,
                                         std::string_view fallback_address) {
  if (auto st = check_os(host, outputs); !st) return st.error();
  std::string address(fallback_address);
  if (const RawOutput* ssh = outputs.find(ssh_connection_command());
      ssh && ssh->exit_status == 0) {
    auto w = split_words(ssh->out);  // client-ip client-port server-ip server-port
    if (w.size() >= 3) address = std::string(w[2]);
  }
  auto get = [&](const ProbeCommand& c) {
    const RawOutput* r = outputs.find(c);
    return r ? *r : missing_output(c);
  };
  auto os = *os_of(outputs);
  auto commands = probe_commands(os);
  auto at = [&](std::string_view line) {
    for (const auto& c : commands) {
      if (c.line == line) return get(c);
    }
    return RawOutput{};
  };
  if (os == ProbeOs::kMacos) {
    MacosOutputs m{at(kSwVersCommand),       at(kSysctlCommand),     at(kSystemProfilerCommand),
                   at(kNetworksetupCommand), at(kIfconfigCommand),   at(kRdmaCtlCommand),
                   at(kIbvDevicesCommand),   at(kIbvDevinfoCommand), at(kIoregPlatformCommand)};
    auto facts = assemble_macos_facts(host, m);
    if (facts) facts->management_address = address;
    if (facts && !outputs.ssh_host_key.empty()) facts->ssh_host_key = outputs.ssh_host_key;
    return facts;
  }
  LinuxOutputs l{at(kOsReleaseCommand),        at(kMeminfoCommand),         at(kCpuModelCommand),
                 at(kProductNameCommand),      at(kIpDetailAddrCommand),    at(kRdmaLinkCommand),
                 at(kSysfsThunderboltCommand), at(kSysfsInfinibandCommand), at(kMachineIdCommand),
                 at(kDbusMachineIdCommand)};
  auto facts = assemble_linux_facts(host, l, address);
  if (facts && !outputs.ssh_host_key.empty()) facts->ssh_host_key = outputs.ssh_host_key;
  return facts;
}

}  // namespace cc::discovery
