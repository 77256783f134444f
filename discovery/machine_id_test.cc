#include "discovery/machine_id.h"

#include <doctest/doctest.h>

#include "discovery/test_fixtures.h"

using namespace cc::discovery;

TEST_CASE("machine id: /etc/machine-id as machine-id(5) writes it") {
  auto id = parse_machine_id("3d1219c7c4c5404aaa1f6d2a48adfda4\n");
  REQUIRE(id.ok());
  CHECK(*id == "3d1219c7c4c5404aaa1f6d2a48adfda4");
  // Upper case (written by hand) is the same ID; blanks around it are ignored.
  id = parse_machine_id("  3D1219C7C4C5404AAA1F6D2A48ADFDA4 \r\n");
  REQUIRE(id.ok());
  CHECK(*id == "3d1219c7c4c5404aaa1f6d2a48adfda4");
  // The D-Bus copy is named as such in errors.
  auto bad = parse_machine_id("", kDbusMachineIdCommand);
  REQUIRE(!bad.ok());
  CHECK(bad.error().message ==
        "`cat /var/lib/dbus/machine-id` output: empty: the machine has no machine ID yet");
}

TEST_CASE("machine id: uninitialized, short, non-hex and null IDs are refused") {
  auto r = parse_machine_id("uninitialized\n");
  REQUIRE(!r.ok());
  CHECK(r.error().message ==
        "`cat /etc/machine-id` output: \"uninitialized\": the machine ID is set at the end of "
        "the first boot (run `systemd-machine-id-setup`)");
  r = parse_machine_id("3d1219c7c4c5404aaa1f6d2a48adfda\n");  // 31 digits
  REQUIRE(!r.ok());
  CHECK(r.error().message ==
        "`cat /etc/machine-id` output: \"3d1219c7c4c5404aaa1f6d2a48adfda\" "
        "is not a machine ID (32 hex digits)");
  CHECK(!parse_machine_id("3d1219c7-c4c5-404a-aa1f-6d2a48adfda4\n").ok());
  CHECK(!parse_machine_id("zz1219c7c4c5404aaa1f6d2a48adfda4\n").ok());
  r = parse_machine_id("00000000000000000000000000000000\n");
  REQUIRE(!r.ok());
  CHECK(r.error().message ==
        "`cat /etc/machine-id` output: all zeros, the null ID (run `systemd-machine-id-setup`)");
}

TEST_CASE("machine id: IOPlatformUUID from ioreg -rd1 -c IOPlatformExpertDevice") {
  auto uuid =
      parse_ioreg_platform_uuid(testing::fixture("macos/ioreg-rd1-IOPlatformExpertDevice.txt"));
  REQUIRE(uuid.ok());
  CHECK(*uuid == "5E0F1C2A-7B3D-5A49-9C1E-0D2F3A4B5C6D");
  // IOPlatformSerialNumber and the other quoted properties are not taken for it; lower case
  // is returned as macOS prints it.
  uuid = parse_ioreg_platform_uuid(
      "    {\n      \"IOPlatformSerialNumber\" = \"C02ZZZZZZZZZ\"\n"
      "      \"IOPlatformUUID\" = \"5e0f1c2a-7b3d-5a49-9c1e-0d2f3a4b5c6d\"\n    }\n");
  REQUIRE(uuid.ok());
  CHECK(*uuid == "5E0F1C2A-7B3D-5A49-9C1E-0D2F3A4B5C6D");
}

TEST_CASE("machine id: ioreg output without a usable IOPlatformUUID is a named error") {
  auto r = parse_ioreg_platform_uuid("+-o J516cAP  <class IOPlatformExpertDevice>\n    {\n    }\n");
  REQUIRE(!r.ok());
  CHECK(r.error().message ==
        "`ioreg -rd1 -c IOPlatformExpertDevice` output: no "
        "\"IOPlatformUUID\" = \"...\" line");
  r = parse_ioreg_platform_uuid("      \"IOPlatformUUID\" = \"not-a-uuid\"\n");
  REQUIRE(!r.ok());
  CHECK(r.error().message ==
        "`ioreg -rd1 -c IOPlatformExpertDevice` output: IOPlatformUUID "
        "\"not-a-uuid\" is not a UUID");
  r = parse_ioreg_platform_uuid("      \"IOPlatformUUID\" = <5e0f1c2a>\n");
  REQUIRE(!r.ok());
  CHECK(r.error().message ==
        "`ioreg -rd1 -c IOPlatformExpertDevice` output: IOPlatformUUID "
        "\"<5e0f1c2a>\" is not a quoted string");
}
