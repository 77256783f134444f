// Where a lab keeps its files, and their contents. Rendering is pure (files_test.cc); lab_up.cc
// writes the results with util::write_file_atomic.
//
// The lab directory (default remote::lab_dir(NAME): ${XDG_STATE_HOME:-$HOME/.local/state}/
// clusterctl/labs/NAME, where --lab NAME looks):
//   inventory.yaml        the hosts, for --lab NAME (remote/ reads it)
//   ssh_config            Host h1..hN with HostName, User root, the user key, known_hosts
//   known_hosts           each host's management address and its host key
//   id_ed25519(.pub)      the user key; its .pub is every sshd's AuthorizedKeysFile
//   lab.json              the lab's own record (record.h)
//   hosts/hN/             ssh_host_ed25519_key(.pub), sshd_config, sshd.pid, sshd.log
// Runtime state, outside the lab directory: /run/clusterctl/labs/NAME/
//   hN.uts                host hN's UTS namespace (hostname hN), kept by a bind mount
//   lab_dir               the lab directory that made the lab: whose it is (owner.h); never
//                         a path that `lab down` deletes in
//   hosts/hN/data         host hN's data directory: a tmpfs of `lab up --data-size` (source
//                         clusterctl-lab-NAME-hN, mode 0755, root's), in the root namespace
//   data                  the common data path: empty here; in host hN's sshd mount namespace
//                         (and so in every session) hosts/hN/data is bind-mounted on it (data.h)
// and beside it /run/clusterctl/labs/NAME.lock, the lock that `lab up` and `lab down` hold
// (lock.h), removed by `lab down` once the lab is gone.
// Each host's own /etc files: /etc/netns/cc-NAME-hN/ (iproute2's convention, ip-netns(8):
// `ip netns exec` bind-mounts every file there over the one of that name in /etc, for the
// command it starts, here each host's sshd and so every session):
//   machine-id            the host's own machine ID (machine-id(5)), because the hosts are
//                         namespaces of one machine and would otherwise all report its own
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "lab/record.h"
#include "remote/inventory.h"
#include "util/result.h"

namespace cc::lab {

namespace fs = std::filesystem;

/// /run/clusterctl/labs/NAME.
fs::path runtime_dir(std::string_view name);

/// /run/clusterctl/labs/NAME/data: the path where every host of lab `name` sees its own data
/// directory (an empty directory in the root namespace).
fs::path data_dir(std::string_view name);

/// /run/clusterctl/labs/NAME/hosts/HOST/data: host `host`'s data directory (its tmpfs) as the
/// root namespace sees it.
fs::path host_data_dir(std::string_view name, std::string_view host);

/// "clusterctl-lab-NAME-HOST": the source of host `host`'s tmpfs, by which `lab down` finds it.
std::string data_mount_source(std::string_view name, std::string_view host);

/// /etc/netns/NETNS: the per-namespace /etc files `ip netns exec NETNS` bind-mounts.
fs::path netns_etc_dir(std::string_view netns);

/// A new random machine ID as systemd-machine-id-setup writes one (machine-id(5)): 32
/// lower-case hex digits, a version 4 UUID's bits, from std::random_device.
std::string random_machine_id();

/// The files of one lab directory.
struct LabFiles {
  fs::path dir;

  fs::path inventory() const { return dir / "inventory.yaml"; }
  fs::path ssh_config() const { return dir / "ssh_config"; }
  fs::path known_hosts() const { return dir / "known_hosts"; }
  fs::path user_key() const { return dir / "id_ed25519"; }
  fs::path user_pub() const { return dir / "id_ed25519.pub"; }
  fs::path lab_json() const { return dir / "lab.json"; }
  fs::path hosts_dir() const { return dir / "hosts"; }
  fs::path host_dir(std::string_view host) const { return hosts_dir() / host; }
  fs::path host_key(std::string_view host) const { return host_dir(host) / "ssh_host_ed25519_key"; }
  fs::path host_pub(std::string_view host) const {
    return host_dir(host) / "ssh_host_ed25519_key.pub";
  }
  fs::path sshd_config(std::string_view host) const { return host_dir(host) / "sshd_config"; }
  fs::path sshd_pid(std::string_view host) const { return host_dir(host) / "sshd.pid"; }
  fs::path sshd_log(std::string_view host) const { return host_dir(host) / "sshd.log"; }
  /// The host's own home directory, its sessions' $HOME (sshd_config SetEnv): hosts share this
  /// machine's file system, but not each other's (or the operator's) dotfiles.
  fs::path host_home(std::string_view host) const { return host_dir(host) / "home"; }
  /// Scratch directory for ssh-keygen output before it is moved into place.
  fs::path keygen_dir() const { return dir / ".keygen"; }
};

/// The file names `lab up` creates directly in the lab directory and in each hosts/hN/ (what
/// `lab down` may delete; anything else found there is left alone).
const std::vector<std::string>& lab_dir_file_names();
const std::vector<std::string>& host_dir_file_names();

/// Errors (kUsage) for a directory path that sshd_config/ssh_config cannot carry: a double
/// quote, '%', or a control character.
util::Status check_lab_dir_path(const fs::path& dir);

/// OpenSSH client config with one Host block per lab host.
std::string render_ssh_config(const LabRecord& lab, const LabFiles& files);

/// "ADDRESS KEYTYPE BASE64" per host. `host_keys` maps host name to its .pub text
/// ("ssh-ed25519 AAAA... comment"); the comment is dropped. Errors (kUsage) for a host with
/// no key or a malformed one.
util::Result<std::string> render_known_hosts(const LabRecord& lab,
                                             const std::map<std::string, std::string>& host_keys);

/// sshd_config of one host (listen on its management address, key-only root login, logs and
/// pid file in hosts/hN/, enough MaxStartups/MaxSessions for 64 parallel sessions).
std::string render_sshd_config(const LabRecord& lab, const HostRecord& host, const LabFiles& files);

/// The inventory of the lab (remote::save_inventory writes it as inventory.yaml): ssh_config
/// and known_hosts beside it, hosts h1..hN with their management addresses.
remote::Inventory lab_inventory(const LabRecord& lab, const LabFiles& files);

}  // namespace cc::lab
