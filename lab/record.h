// lab.json: the lab's own record of what `lab up` made. Tests compare discovery results against
// its cables (discovery itself never reads it); `lab status` and `lab down` read it when it is
// there, and `lab down` also works without it.
//
//   {"version": 1, "name": "ct8", "tag": "cc1a2b3c", "state": "up", "dir": "/...",
//    "data_dir": "/run/clusterctl/labs/ct8/data", "data_size": 8589934592,
//    "topology": "mesh", "subnet": "10.7.9.0/24", "bridge": "cc1a2b3cbr",
//    "bridge_address": "10.7.9.254", "namespaces": ["cc-ct8-h1", ...],
//    "hosts": [{"name": "h1", "namespace": "cc-ct8-h1", "address": "10.7.9.1",
//               "mgmt_interface": "en0", "mgmt_mac": "02:..", "mgmt_link": "cc1a2b3cm1",
//               "sshd_pid": 4242, "ports": ["tb1", "tb2"], "free_ports": [],
//               "machine_id": "3f0c...": the host's own /etc/machine-id,
//               "data_dir": "/run/clusterctl/labs/ct8/hosts/h1/data"}, ...],
//    "cables": [{"a": {"host": "h1", "port": "tb1", "mac": "02:.."},
//                "b": {"host": "h2", "port": "tb1", "mac": "02:.."}}, ...]}
//
// "state" is "creating" while `lab up` runs (written before any resource exists) and "up" once
// every sshd answers. sshd_pid is 0 until its sshd has started. "data_dir" is the common path
// where every host sees its own data directory, each host's "data_dir" that directory (its
// tmpfs of "data_size" bytes) in the root namespace (files.h, data.h); a lab.json written
// before they existed reads with them empty and 0.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace cc::lab {

struct LabPlan;

struct HostRecord {
  std::string name;
  std::string netns;
  std::string address;
  std::string mgmt_interface;
  std::string mgmt_mac;
  std::string mgmt_link;
  int sshd_pid = 0;
  std::vector<std::string> ports;       // cabled ports, receptacle order
  std::vector<std::string> free_ports;  // ports without a cable (up, no carrier)
  std::string machine_id;  // its /etc/machine-id (files.h: /etc/netns); "" until written
  // Its data directory in the root namespace (files.h host_data_dir); "" in older records.
  std::string data_dir;
};

struct PortRecord {
  std::string host;
  std::string port;
  std::string mac;
};

struct CableRecord {
  PortRecord a;
  PortRecord b;
};

struct LabRecord {
  int version = 1;
  std::string name;
  std::string tag;
  std::string state;  // "creating" or "up"
  std::string dir;
  std::string data_dir;         // the common data path (files.h data_dir); "" in older records
  std::uint64_t data_size = 0;  // bytes of each host's tmpfs; 0 in older records
  std::string topology;
  std::string subnet;
  std::string bridge;
  std::string bridge_address;
  std::vector<std::string> namespaces;
  std::vector<HostRecord> hosts;
  std::vector<CableRecord> cables;
};

/// The record of a plan, state "creating", no sshd pids yet; each host's data directory a tmpfs
/// of `data_size` bytes.
LabRecord record_from_plan(const LabPlan& plan, std::string dir, std::uint64_t data_size);

/// Pretty-printed lab.json text (ends with a newline).
std::string lab_json_text(const LabRecord& lab);

/// Parses lab.json text. `source` names the file in errors (kUsage).
util::Result<LabRecord> parse_lab_json(std::string_view text, std::string_view source);

}  // namespace cc::lab
