#include "discovery/host_facts.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace cc::discovery;
using nlohmann::json;

namespace {

HostFacts sample() {
  HostFacts f;
  f.host = "b";
  f.os = {"macOS", "27.0", "26A1"};
  f.model = "Mac17,6";
  f.cpu = "Apple M5 Max";
  f.memory_bytes = 137438953472ULL;
  f.management_address = "10.0.0.12";
  Port p;
  p.receptacle = 2;
  p.domain_uuid = "00000003-0000-4000-8000-000000000003";
  NetInterface en6;
  en6.name = "en6";
  en6.up = true;
  en6.running = true;
  en6.mtu = 1500;
  en6.ipv4 = {"169.254.10.2"};
  en6.bridge = "bridge0";
  p.interface = en6;
  p.rdma_device = "rdma_en6";
  p.link_speed_gbps = 80;
  p.generation = 5;
  Peer a;
  a.kind = Peer::Kind::kHost;
  a.name = "MacBook Pro";
  a.model = "Mac17,6";
  a.domain_uuid = "00000004-0000-4000-8000-000000000004";
  p.peers.push_back(a);
  f.ports.push_back(p);
  NetInterface br;
  br.name = "bridge0";
  br.members = {"en1", "en2", "en6"};
  f.interfaces.push_back(br);
  f.rdma.state = RdmaState::kEnabled;
  RdmaDevice d;
  d.name = "rdma_en6";
  d.transport = "Thunderbolt (100)";
  RdmaPort rp;
  rp.state = "PORT_DOWN";
  rp.gids = {{1, "::ffff:169.254.10.2"}};
  d.ports.push_back(rp);
  f.rdma.devices.push_back(d);
  return f;
}

}  // namespace

TEST_CASE("host facts: documented field names, units in the names") {
  json j = sample();
  CHECK(j["memory_bytes"] == 137438953472ULL);
  CHECK(j["os"]["version"] == "27.0");
  CHECK(j["ports"][0]["receptacle"] == 2);
  CHECK(j["ports"][0]["link_speed_gbps"] == 80);
  CHECK(j["ports"][0]["generation"] == 5);
  CHECK(j["ports"][0]["interface"]["name"] == "en6");
  CHECK(j["ports"][0]["interface"]["bridge"] == "bridge0");
  CHECK(j["ports"][0]["rdma_device"] == "rdma_en6");
  CHECK(j["ports"][0]["peers"][0]["kind"] == "host");
  CHECK(j["ports"][0]["peers"][0]["domain_uuid"] == "00000004-0000-4000-8000-000000000004");
  CHECK(j["interfaces"][0]["bridge"].is_null());
  CHECK(j["rdma"]["state"] == "enabled");
  CHECK(j["rdma"]["devices"][0]["ports"][0]["gids"][0]["gid"] == "::ffff:169.254.10.2");
}

TEST_CASE("host facts: JSON round trip") {
  json j = sample();
  auto back = host_facts_from_json(j);
  REQUIRE(back.ok());
  CHECK(json(*back) == j);
  CHECK(back->ports[0].peers[0].kind == Peer::Kind::kHost);
  CHECK(back->rdma.state == RdmaState::kEnabled);
  CHECK(back->ports[0].interface->ipv4 == std::vector<std::string>{"169.254.10.2"});
}

TEST_CASE("host facts: missing fields keep defaults, unknown fields are ignored") {
  auto f = host_facts_from_json(json{{"host", "h1"}, {"future_field", 1}});
  REQUIRE(f.ok());
  CHECK(f->host == "h1");
  CHECK(f->memory_bytes == 0);
  CHECK(f->rdma.state == RdmaState::kUnknown);
}

TEST_CASE("host facts: wrong types and bad enum strings name the field, never throw") {
  json j = sample();
  j["ports"][0]["interface"]["mtu"] = "big";
  auto f = host_facts_from_json(j);
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().code == cc::util::ExitCode::kUsage);
  CHECK(f.error().message.find("host facts: ports.interface.mtu: type must be number") == 0);

  json k = sample();
  k["rdma"]["state"] = "maybe";
  auto g = host_facts_from_json(k);
  REQUIRE_FALSE(g.ok());
  CHECK(g.error().message.find("host facts: rdma.state: \"maybe\" is not one of") == 0);

  json l = sample();
  l["ports"][0]["peers"][0]["kind"] = "toaster";
  auto h = host_facts_from_json(l);
  REQUIRE_FALSE(h.ok());
  CHECK(h.error().message.find("host facts: ports.peers.kind: \"toaster\"") == 0);
  CHECK_FALSE(host_facts_from_json(json::array()).ok());
}

TEST_CASE("host facts: a fraction or an out-of-range number in an integer field is a clear error") {
  auto j = nlohmann::json::parse(R"({"host": "h1", "memory_bytes": 2.7e86})");
  auto f = cc::discovery::host_facts_from_json(j);
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().message == "host facts: memory_bytes: 2.7e+86 is not an integer in range");
  auto depth = nlohmann::json::parse(
      R"({"host": "h1", "ports": [{"peers": [{"kind": "host", "depth": 1.5}]}]})");
  auto d = cc::discovery::host_facts_from_json(depth);
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().message == "host facts: ports.peers.depth: 1.5 is not an integer in range");
  CHECK(cc::discovery::host_facts_from_json(nlohmann::json::parse(R"({"memory_bytes": 8})")).ok());
}

TEST_CASE("host facts: machine_id and ssh_host_key are optional, null when unknown") {
  HostFacts f = sample();
  f.machine_id = "5E0F1C2A-7B3D-5A49-9C1E-0D2F3A4B5C6D";
  f.ssh_host_key = "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU";
  json j = f;
  CHECK(j["machine_id"] == "5E0F1C2A-7B3D-5A49-9C1E-0D2F3A4B5C6D");
  CHECK(j["ssh_host_key"] == "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU");
  auto back = host_facts_from_json(j);
  REQUIRE(back.ok());
  CHECK(back->machine_id == f.machine_id);
  CHECK(back->ssh_host_key == f.ssh_host_key);
  // Unknown: written as null.
  json none = sample();
  CHECK(none["machine_id"].is_null());
  CHECK(none["ssh_host_key"].is_null());
  // A file written before these fields existed (no keys at all) still reads.
  none.erase("machine_id");
  none.erase("ssh_host_key");
  auto old = host_facts_from_json(none);
  REQUIRE(old.ok());
  CHECK(!old->machine_id);
  CHECK(!old->ssh_host_key);
  // A wrong type is still an error naming the field.
  none["machine_id"] = 42;
  auto bad = host_facts_from_json(none);
  REQUIRE(!bad.ok());
  CHECK(bad.error().message.find("host facts: machine_id: type must be string") == 0);
}
