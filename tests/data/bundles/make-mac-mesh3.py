#!/usr/bin/env python3
"""Builds the support bundle mac-mesh3/: three Macs in a full Thunderbolt 5 mesh, RDMA ready.

The bundle has the layout `clusterctl collect -o DIR` writes (remote/replay_executor.h): one
directory per host, KEY.out / KEY.err / KEY.exit per probe command. `clusterctl discover --from
mac-mesh3` replays it; `clusterctl hostfile --format mlx-jaccl --from mac-mesh3` must equal
tests/data/expected/mac-mesh3.mlx-jaccl.json.

Nothing here was recorded as a whole: every output is written in the shape of the recorded ones
in tests/data/fixtures/macos (system_profiler SPThunderboltDataType -json of pair-a / pair-b,
networksetup -listallhardwareports, ibv_devices, ibv_devinfo, ifconfig en2 / bridge0,
ping6 ff02::1), for a state that `clusterctl network apply` and `rdma enable` would leave:

  mac1, mac2, mac3: MacBook Pro (Mac17,6), macOS 26.2 (25C56), three Thunderbolt 5 ports each;
  networksetup as recorded: receptacle 1 = en1, 2 = en6, 3 = en2.
  Cables (receptacle <-> receptacle), every one 80 Gb/s:
    mac1 r1 (en1) - mac2 r2 (en6)    two parallel cables between mac1 and mac2, crossed on
    mac1 r2 (en6) - mac2 r1 (en1)    purpose so each end lists them in a different port order
    mac1 r3 (en2) - mac3 r1 (en1)
    mac2 r3 (en2) - mac3 r2 (en6)
    mac3 r3 (en2) free
  Domain UUIDs are reciprocal: each cabled bus's item names the other end's bus domain and
  advertises the XDomain services service_ip (1) and rdma (64087). rdma_ctl: enabled on all
  three; one rdma_enX per port, PORT_ACTIVE on cabled ports (PORT_DOWN on the free one), GID
  table as `ibv_devinfo -v` prints it (GID[1] = ::ffff:<IPv4 of enX>). Cabled ports hold a
  self-assigned 169.254 address and a link-local IPv6 address; the Thunderbolt Bridge (bridge0)
  is inactive with no members. Management: en0 (Wi-Fi) 10.0.0.1N, the address SSH reached
  (printenv SSH_CONNECTION). Every cabled port's ff02::1 ping is answered by itself and by the
  port at the other end, so both cable sources (Thunderbolt, neighbour) see every cable.

Run it from anywhere: python3 tests/data/bundles/make-mac-mesh3.py
"""
import ipaddress
import json
import pathlib
import shutil

HERE = pathlib.Path(__file__).resolve().parent
FIX = HERE.parent / "fixtures" / "macos"
OUT = HERE / "mac-mesh3"

MACS = [1, 2, 3]
IFACE = {1: "en1", 2: "en6", 3: "en2"}  # receptacle -> interface (networksetup fixture)
CABLES = [((1, 1), (2, 2)), ((1, 2), (2, 1)), ((1, 3), (3, 1)), ((2, 3), (3, 2))]


def name(m):
    return f"mac{m}"


def domain(m, r):
    return f"5A3C{m:04X}-{r:04X}-4000-8000-{m:06X}{r:06X}"


def ipv4(m, r):
    return f"169.254.{m}{r}.{m}{r}"


def ipv6(m, r):
    return f"fe80::10{m}:{r}"


def mac_address(m, r):
    return f"36:4d:04:ea:{m:02x}:{r:02x}"


def peer_of(m, r):
    for a, b in CABLES:
        if a == (m, r):
            return b
        if b == (m, r):
            return a
    return None


def bus(m, r):
    peer = peer_of(m, r)
    b = {}
    if peer:
        pm, pr = peer
        b["_items"] = [{
            "_name": "MacBook Pro",
            "device_id_key": "0xA",
            "device_name_key": "Mac17,6",
            "domain_uuid_key": domain(pm, pr),
            "services_title": [
                {"_name": "service_ip", "protocol_id_key": 1, "protocol_revision_key": 1,
                 "protocol_version_key": 1,
                 "service_uuid_key": f"00000{pm}0{pr}-0000-4000-8000-00000000000{pm}"},
                {"_name": "unknown_xd_service", "protocol_id_key": 64087,
                 "protocol_revision_key": 0, "protocol_version_key": 1,
                 "service_key_key": "\u02c7\u02c7\u02c7\u02c7\u02c7\u02c7AD",
                 "service_uuid_key": f"00000{pm}0{pr}-0000-4000-8000-0000000000{pm}{pr}"},
            ],
            "vendor_id_key": "0x0A27",
            "vendor_name_key": "Apple Inc.",
        }]
    b["_name"] = f"thunderboltusb4_bus_{r - 1}"
    b["device_name_key"] = "MacBook Pro"
    b["domain_uuid_key"] = domain(m, r)
    tag = {"current_speed_key": "80 Gb/s", "link_status_key": "0x2",
           "micro_version_key": "0.0.0", "receptacle_id_key": str(r),
           "receptacle_status_key": "receptacle_connected"}
    if not peer:
        tag = {"current_speed_key": "Up to 120 Gb/s", "link_status_key": "0x100",
               "receptacle_id_key": str(r),
               "receptacle_status_key": "receptacle_no_devices_connected"}
    b["receptacle_1_tag"] = tag
    b["route_string_key"] = "0"
    b["switch_uid_key"] = f"0x{m:012X}{r:04X}"
    b["vendor_name_key"] = "Apple Inc."
    return b


def system_profiler(m):
    # The recorded outputs list the buses from the highest receptacle down.
    return json.dumps({"SPThunderboltDataType": [bus(m, r) for r in (3, 2, 1)]}, indent=1,
                      ensure_ascii=True) + "\n"


def ifconfig(m):
    out = (
        "lo0: flags=8049<UP,LOOPBACK,RUNNING,MULTICAST> mtu 16384\n"
        "\tinet 127.0.0.1 netmask 0xff000000\n"
        "en0: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n"
        f"\tether 02:00:00:00:0{m}:05\n"
        f"\tinet 10.0.0.1{m} netmask 0xffffff00 broadcast 10.0.0.255\n"
        "\tstatus: active\n"
    )
    for scope, r in ((0xc, 1), (0xd, 2), (0xe, 3)):
        itf = IFACE[r]
        if peer_of(m, r):
            out += (
                f"{itf}: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n"
                "\toptions=460<TSO4,TSO6,CHANNEL_IO>\n"
                f"\tether {mac_address(m, r)}\n"
                f"\tinet6 {ipv6(m, r)}%{itf} prefixlen 64 secured scopeid {scope:#x}\n"
                f"\tinet {ipv4(m, r)} netmask 0xffff0000 broadcast 169.254.255.255\n"
                "\tnd6 options=201<PERFORMNUD,DAD>\n"
                "\tmedia: autoselect <full-duplex>\n"
                "\tstatus: active\n"
            )
        else:
            out += (
                f"{itf}: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n"
                "\toptions=460<TSO4,TSO6,CHANNEL_IO>\n"
                f"\tether {mac_address(m, r)}\n"
                "\tmedia: autoselect <full-duplex>\n"
                "\tstatus: inactive\n"
            )
    out += (
        "bridge0: flags=8822<BROADCAST,SMART,SIMPLEX,MULTICAST> mtu 1500\n"
        f"\tether 36:4d:04:ea:4e:{m:02x}\n"
        "\tConfiguration:\n"
        "\t\tid 0:0:0:0:0:0 priority 0 hellotime 0 fwddelay 0\n"
        "\tmedia: <unknown type>\n"
        "\tstatus: inactive\n"
    )
    return out


def guid(m, r):
    return f"{0x80 + r:02x}96a9d9ed{m:02x}ac05"


def ibv_devices(m):
    out = "    device          \t   node GUID\n    ------          \t----------------\n"
    for r in (1, 2, 3):  # networksetup order, as recorded
        out += f"    rdma_{IFACE[r]:<12}\t{guid(m, r)}\n"
    return out


def ibv_devinfo(m):
    blocks = []
    for r in (1, 2, 3):
        g = guid(m, r)
        active = peer_of(m, r) is not None
        block = (
            f"hca_id:\trdma_{IFACE[r]}\n"
            "\ttransport:\t\t\tThunderbolt (100)\n"
            f"\tnode_guid:\t\t\t{g[0:4]}:{g[4:8]}:{g[8:12]}:{g[12:16]}\n"
            f"\tsys_image_guid:\t\t\t0000:0000:0000:000{m}\n"
            "\tvendor_id:\t\t\t0x0000\n"
            "\tvendor_part_id:\t\t\t0\n"
            "\thw_ver:\t\t\t\t0x0\n"
            "\tphys_port_cnt:\t\t\t1\n"
            "\t\tport:\t1\n"
            + ("\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n" if active
               else "\t\t\tstate:\t\t\tPORT_DOWN (1)\n")
            + "\t\t\tmax_mtu:\t\t4096 (5)\n"
            "\t\t\tactive_mtu:\t\t4096 (5)\n"
            f"\t\t\tsm_lid:\t\t\t{r}\n"
            f"\t\t\tport_lid:\t\t{r}\n"
            "\t\t\tport_lmc:\t\t0x00\n"
            "\t\t\tlink_layer:\t\tThunderbolt\n"
        )
        if active:
            mac = mac_address(m, r).split(":")  # EUI-64: flip the U/L bit, insert ff:fe
            eui = ipaddress.IPv6Address(f"fe80::{int(mac[0], 16) ^ 2:02x}{mac[1]}:{mac[2]}ff:"
                                        f"fe{mac[3]}:{mac[4]}{mac[5]}").compressed
            block += (
                f"\t\t\tGID[  0]:\t\t{eui}\n"
                f"\t\t\tGID[  1]:\t\t::ffff:{ipv4(m, r)}\n"
                f"\t\t\tGID[  2]:\t\t{ipv6(m, r)}\n"
            )
        blocks.append(block)
    return "\n".join(blocks)


def ping6(m, r):
    itf = IFACE[r]
    pm, pr = peer_of(m, r)
    me, them = f"{ipv6(m, r)}%{itf}", f"{ipv6(pm, pr)}%{itf}"
    return (
        f"PING6(56=40+8+8 bytes) {me} --> ff02::1%{itf}\n"
        f"16 bytes from {me}, icmp_seq=0 hlim=64 time=0.326 ms\n"
        f"16 bytes from {them}, icmp_seq=0 hlim=64 time=1.108 ms(DUP!)\n"
        f"16 bytes from {me}, icmp_seq=1 hlim=64 time=0.211 ms\n"
        f"16 bytes from {them}, icmp_seq=1 hlim=64 time=0.954 ms(DUP!)\n"
        "\n"
        f"--- ff02::1%{itf} ping6 statistics ---\n"
        "2 packets transmitted, 2 packets received, +2 duplicates, 0.0% packet loss\n"
        "round-trip min/avg/max/std-dev = 0.211/0.650/1.108/0.392 ms\n"
    )


def write(host, key, out):
    d = OUT / host
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{key}.out").write_text(out)


if OUT.exists():
    shutil.rmtree(OUT)
for m in MACS:
    h = name(m)
    write(h, "uname_-s", "Darwin\n")
    write(h, "printenv_SSH_CONNECTION", f"10.0.0.100 5200{m} 10.0.0.1{m} 22\n")
    write(h, "sw_vers", "ProductName:\t\tmacOS\nProductVersion:\t\t26.2\nBuildVersion:\t\t25C56\n")
    write(h, "sysctl_-n_hw.model_hw.memsize_machdep.cpu.brand_string",
          "Mac17,6\n137438953472\nApple M5 Max\n")
    write(h, "system_profiler_SPThunderboltDataType_-json", system_profiler(m))
    write(h, "networksetup_-listallhardwareports",
          (FIX / "pair.networksetup-listallhardwareports.txt").read_text())
    write(h, "ifconfig_-a", ifconfig(m))
    write(h, "rdma_ctl_status", "enabled\n")
    write(h, "ibv_devices", ibv_devices(m))
    write(h, "ibv_devinfo_-v", ibv_devinfo(m))
    for r in (1, 2, 3):
        if peer_of(m, r):
            write(h, f"ping6_-c_2_ff02_1_{IFACE[r]}", ping6(m, r))
