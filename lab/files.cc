#include "lab/files.h"

#include <algorithm>
#include <random>
#include <sstream>

#include <fmt/format.h>

namespace cc::lab {
namespace {

using util::ExitCode;

// Paths were checked by check_lab_dir_path(); quoting covers spaces.
std::string quoted(const fs::path& p) {
  const std::string& s = p.native();
  return s.find_first_of(" \t") == std::string::npos ? s : "\"" + s + "\"";
}

}  // namespace

fs::path runtime_dir(std::string_view name) {
  return fs::path("/run/clusterctl/labs") / std::string(name);
}

fs::path data_dir(std::string_view name) {
  return runtime_dir(name) / "data";
}

fs::path host_data_dir(std::string_view name, std::string_view host) {
  return runtime_dir(name) / "hosts" / std::string(host) / "data";
}

std::string data_mount_source(std::string_view name, std::string_view host) {
  return fmt::format("clusterctl-lab-{}-{}", name, host);
}

fs::path netns_etc_dir(std::string_view netns) {
  return fs::path("/etc/netns") / std::string(netns);
}

std::string random_machine_id() {
  std::random_device rd;
  std::uniform_int_distribution<unsigned> nibble(0, 15);
  std::string id;
  for (int i = 0; i < 32; ++i) {
    unsigned v = nibble(rd);
    if (i == 12) v = 4;            // version 4
    if (i == 16) v = 8 | (v & 3);  // variant 10xx
    id += "0123456789abcdef"[v];
  }
  return id;
}

const std::vector<std::string>& lab_dir_file_names() {
  static const std::vector<std::string> names{"inventory.yaml", "ssh_config",     "known_hosts",
                                              "id_ed25519",     "id_ed25519.pub", "lab.json"};
  return names;
}

const std::vector<std::string>& host_dir_file_names() {
  static const std::vector<std::string> names{"ssh_host_ed25519_key", "ssh_host_ed25519_key.pub",
                                              "sshd_config", "sshd.pid", "sshd.log"};
  return names;
}

util::Status check_lab_dir_path(const fs::path& dir) {
  const std::string& s = dir.native();
  bool bad = std::any_of(s.begin(), s.end(), [](char c) {
    return c == '"' || c == '%' || static_cast<unsigned char>(c) < 0x20;
  });
  if (bad) {
    return util::error(ExitCode::kUsage,
                       fmt::format("lab directory '{}' cannot be written into sshd and ssh "
                                   "configs (it has a '\"', '%' or control character): choose "
                                   "another with --dir",
                                   s));
  }
  if (!dir.is_absolute()) {
    return util::error(ExitCode::kUsage,
                       fmt::format("lab directory '{}' must be an absolute path", s));
  }
  return {};
}

std::string render_ssh_config(const LabRecord& lab, const LabFiles& files) {
  std::string s = fmt::format(
      "# Lab '{}', written by `clusterctl lab up`; removed by `clusterctl lab down`.\n"
      "# Use: ssh -F {} h1\n",
      lab.name, quoted(files.ssh_config()));
  for (const auto& h : lab.hosts) {
    fmt::format_to(std::back_inserter(s),
                   "\nHost {}\n"
                   "  HostName {}\n"
                   "  User root\n"
                   "  Port 22\n"
                   "  IdentityFile {}\n"
                   "  IdentitiesOnly yes\n"
                   "  UserKnownHostsFile {}\n"
                   "  StrictHostKeyChecking yes\n",
                   h.name, h.address, quoted(files.user_key()), quoted(files.known_hosts()));
  }
  return s;
}

util::Result<std::string> render_known_hosts(const LabRecord& lab,
                                             const std::map<std::string, std::string>& host_keys) {
  std::string s;
  for (const auto& h : lab.hosts) {
    auto it = host_keys.find(h.name);
    std::string type;
    std::string key;
    if (it != host_keys.end()) {
      std::istringstream in(it->second);
      in >> type >> key;
    }
    if (type.empty() || key.empty()) {
      return util::error(ExitCode::kUsage, fmt::format("{}: no usable host public key", h.name));
    }
    fmt::format_to(std::back_inserter(s), "{} {} {}\n", h.address, type, key);
  }
  return s;
}

std::string render_sshd_config(const LabRecord& lab, const HostRecord& host,
                               const LabFiles& files) {
  return fmt::format(
      "# Host {} of lab '{}', written by `clusterctl lab up`; removed by `clusterctl lab down`.\n"
      "ListenAddress {}:22\n"
      "HostKey {}\n"
      "PidFile {}\n"
      "AuthorizedKeysFile {}\n"
      "PermitRootLogin prohibit-password\n"
      "PubkeyAuthentication yes\n"
      "PasswordAuthentication no\n"
      "KbdInteractiveAuthentication no\n"
      "StrictModes no\n"
      "UsePAM no\n"
      "UseDNS no\n"
      "PrintMotd no\n"
      "PrintLastLog no\n"
      "Subsystem sftp internal-sftp\n"
      "# Each host has a home of its own, so the operator's dotfiles (~/.bashrc) stay out.\n"
      "SetEnv {}\n"
      "LogLevel VERBOSE\n"
      "# 64 parallel sessions must fit: unauthenticated connections, sessions per connection.\n"
      "MaxStartups 128\n"
      "MaxSessions 128\n",
      host.name, lab.name, host.address, quoted(files.host_key(host.name)),
      quoted(files.sshd_pid(host.name)), quoted(files.user_pub()),
      quoted(fs::path("HOME=" + files.host_home(host.name).string())));
}

remote::Inventory lab_inventory(const LabRecord& lab, const LabFiles& files) {
  remote::Inventory inv;
  inv.path = files.inventory();
  inv.ssh_config = files.ssh_config();
  inv.known_hosts = files.known_hosts();
  for (const auto& h : lab.hosts) inv.hosts.push_back({h.name, h.name, h.address});
  return inv;
}

}  // namespace cc::lab
