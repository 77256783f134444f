// The Executor that answers from recorded outputs: how outputs captured on real machines (Macs
// with Thunderbolt 5, RDMA NICs) enter the whole pipeline in tests and demos.
//
// Bundle layout, one directory per host and three files per command:
//
//   BUNDLE/
//     studio1/
//       system_profiler_SPThunderboltDataType_-json.out   stdout, byte for byte (required)
//       system_profiler_SPThunderboltDataType_-json.err   stderr (optional, default empty)
//       system_profiler_SPThunderboltDataType_-json.exit  exit status as decimal text
//                                                         (optional, default 0)
//       ssh-host-key     the SHA256 fingerprint of the host key the recorded connection
//                        authenticated, one line (optional: `clusterctl collect` writes it
//                        for SSH hosts; Executor::host_key_fingerprint)
//     studio2/
//       ...
//
// The file stem ("key") is replay_key(cmd), a filename-safe slug of the command line as sent
// over SSH (shell_quote(argv), or shell_quote({"sh", "-c", SCRIPT}) for a shell Command):
//   1. every byte outside [A-Za-z0-9._-] becomes '_', and runs of '_' become one '_';
//   2. leading and trailing '_' are dropped;
//   3. a key longer than 120 bytes, or an empty one, is cut to its first 100 bytes followed by
//      '_' and 16 hex digits of the FNV-1a 64-bit hash of the full command line.
// Examples (argv as typed -> key):
//   system_profiler SPThunderboltDataType -json -> system_profiler_SPThunderboltDataType_-json
//   ibv_devinfo -v                              -> ibv_devinfo_-v
//   cat /sys/class/infiniband/rxe0/ports/1/state -> cat_sys_class_infiniband_rxe0_ports_1_state
//   shell script "ip -j addr | head"            -> sh_-c_ip_-j_addr_head
// Commands that differ only in punctuation or spacing share a key; a bundle holds one of them.
#pragma once

#include <filesystem>
#include <string>

#include "remote/executor.h"

namespace cc::remote {

/// The file stem under which `cmd`'s outputs are recorded (rule above).
std::string replay_key(const Command& cmd);

/// The name of the host key file beside the recordings ("ssh-host-key"; no command's file
/// can have it, since those end in .out, .err or .exit).
inline constexpr const char* kHostKeyFile = "ssh-host-key";

/// Answers run() from BUNDLE/HOST/KEY.{out,err,exit}; nothing is executed.
/// Errors of run(): kUnreachable when BUNDLE/HOST is not a directory (the message names it);
/// kUsage when the recording is missing (the message names the exact .out file expected and
/// the command) or a .exit file does not hold an integer 0..255. RunOptions are ignored
/// (recordings do not time out; stdin is not compared).
/// upload() checks that the local file is readable and has no other effect.
/// The files are read at each run(), so a test can change a host's answers while a command
/// runs: make BUNDLE/HOST a symlink to a per-phase directory and swap it, or remove it to make
/// the host unreachable (tests/data/bundles/make-mac-walk.py, tests/integration/rdma).
class ReplayExecutor final : public Executor {
 public:
  ReplayExecutor(std::filesystem::path bundle, std::string host)
      : bundle_(std::move(bundle)), host_(std::move(host)) {}

  const std::string& host() const override { return host_; }
  util::Result<CommandResult> run(const Command& cmd, const RunOptions& opts) override;
  /// The first line of BUNDLE/HOST/ssh-host-key, trimmed; "" when there is none (a bundle
  /// recorded before it was kept, or from a local host) or it is not a "SHA256:" fingerprint.
  std::string host_key_fingerprint() const override;
  util::Status upload(const std::filesystem::path& local, const std::string& remote_path,
                      unsigned mode, std::chrono::milliseconds timeout) override;

 private:
  std::filesystem::path bundle_;
  std::string host_;
};

}  // namespace cc::remote
