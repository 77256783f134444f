#include "remote/replay_executor.h"

#include <cstdlib>
#include <filesystem>

#include <doctest/doctest.h>

#include "util/atomic_file.h"

namespace fs = std::filesystem;
using cc::remote::Command;
using cc::remote::replay_key;
using cc::remote::ReplayExecutor;
using cc::util::ExitCode;

TEST_CASE("replay_key follows the documented slug rule") {
  CHECK(replay_key({{"system_profiler", "SPThunderboltDataType", "-json"}}) ==
        "system_profiler_SPThunderboltDataType_-json");
  CHECK(replay_key({{"ibv_devinfo", "-v"}}) == "ibv_devinfo_-v");
  CHECK(replay_key({{"cat", "/sys/class/infiniband/rxe0/ports/1/state"}}) ==
        "cat_sys_class_infiniband_rxe0_ports_1_state");
  CHECK(replay_key({{"ip -j addr | head"}, true}) == "sh_-c_ip_-j_addr_head");
  CHECK(replay_key({{"networksetup", "-listallhardwareports"}}) ==
        "networksetup_-listallhardwareports");
  // Long command lines keep a readable prefix and a hash of the whole line.
  std::string long_arg(300, 'a');
  std::string k1 = replay_key({{"echo", long_arg}});
  std::string k2 = replay_key({{"echo", long_arg + "b"}});
  CHECK(k1.size() == 100 + 1 + 16);
  CHECK(k1.substr(0, 7) == "echo_aa");
  CHECK(k1 != k2);
  // Nothing but punctuation: a hash alone.
  std::string k3 = replay_key({{"***"}});
  CHECK(k3.size() == 16);
  CHECK(k3.find_first_not_of("0123456789abcdef") == std::string::npos);
}

TEST_CASE("replay answers from the bundle and names what is missing") {
  std::string tmpl = (fs::temp_directory_path() / "cc-replay-XXXXXX").string();
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  fs::path bundle = tmpl;
  REQUIRE(cc::util::write_file_atomic(bundle / "studio1" / "ibv_devices.out",
                                      "    device \n    ------\n    rdma_en3\n")
              .ok());
  REQUIRE(cc::util::write_file_atomic(bundle / "studio1" / "rdma_ctl_status.out", "").ok());
  REQUIRE(cc::util::write_file_atomic(bundle / "studio1" / "rdma_ctl_status.err",
                                      "rdma_ctl: not permitted\n")
              .ok());
  REQUIRE(cc::util::write_file_atomic(bundle / "studio1" / "rdma_ctl_status.exit", "1\n").ok());
  REQUIRE(cc::util::write_file_atomic(bundle / "studio1" / "bad.exit", "one").ok());
  REQUIRE(cc::util::write_file_atomic(bundle / "studio1" / "bad.out", "").ok());

  ReplayExecutor studio1(bundle, "studio1");
  CHECK(studio1.host() == "studio1");
  auto r = studio1.run({{"ibv_devices"}}, {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 0);
  CHECK(r->out == "    device \n    ------\n    rdma_en3\n");
  CHECK(r->err == "");
  CHECK_FALSE(r->timed_out);

  r = studio1.run({{"rdma_ctl", "status"}}, {});
  REQUIRE(r.ok());
  CHECK(r->exit_status == 1);
  CHECK(r->err == "rdma_ctl: not permitted\n");

  r = studio1.run({{"bad"}}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUsage);
  CHECK(r.error().message.find("bad.exit") != std::string::npos);

  r = studio1.run({{"ibv_devinfo", "-v"}}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUsage);
  CHECK(r.error().message.find((bundle / "studio1" / "ibv_devinfo_-v.out").string()) !=
        std::string::npos);

  ReplayExecutor studio9(bundle, "studio9");
  r = studio9.run({{"ibv_devices"}}, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ExitCode::kUnreachable);
  CHECK(r.error().message.find("studio9") != std::string::npos);

  CHECK(studio1.upload(bundle / "studio1" / "ibv_devices.out", "/tmp/x", 0644, {}).ok());
  CHECK_FALSE(studio1.upload(bundle / "nope", "/tmp/x", 0644, {}).ok());
  fs::remove_all(bundle);
}

TEST_CASE("replay gives the recorded host key fingerprint, or none") {
  std::string tmpl = (fs::temp_directory_path() / "cc-replay-XXXXXX").string();
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  fs::path bundle = tmpl;
  REQUIRE(cc::util::write_file_atomic(bundle / "a" / cc::remote::kHostKeyFile,
                                      "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU\n")
              .ok());
  REQUIRE(cc::util::write_file_atomic(bundle / "b" / "uname_-s.out", "Linux\n").ok());
  REQUIRE(cc::util::write_file_atomic(bundle / "c" / cc::remote::kHostKeyFile, "ssh-ed25519 AAAA\n")
              .ok());
  CHECK(ReplayExecutor(bundle, "a").host_key_fingerprint() ==
        "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU");
  CHECK(ReplayExecutor(bundle, "b").host_key_fingerprint().empty());  // recorded before
  CHECK(ReplayExecutor(bundle, "c").host_key_fingerprint().empty());  // not a fingerprint
  CHECK(ReplayExecutor(bundle, "nobody").host_key_fingerprint().empty());
  fs::remove_all(bundle);
}
