#include "healthcheck/thresholds.h"

#include <cmath>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "util/atomic_file.h"
#include "util/number.h"
#include "util/suggest.h"

namespace cc::healthcheck {
namespace {

using util::ExitCode;

class Reader {
 public:
  explicit Reader(const std::string& file) : file_(file) {}

  util::Error error(const YAML::Mark& m, std::string_view what) const {
    if (m.line < 0) return util::error(ExitCode::kUsage, fmt::format("{}: {}", file_, what));
    return util::error(ExitCode::kUsage,
                       fmt::format("{}:{}:{}: {}", file_, m.line + 1, m.column + 1, what));
  }

  // Checks that `node` is a mapping whose keys are all in `known`.
  util::Status keys(const YAML::Node& node, const std::string& path,
                    const std::vector<std::string>& known) const {
    if (!node.IsMap()) {
      return error(node.Mark(), fmt::format("'{}': expected a mapping (key: value lines)",
                                            path.empty() ? "(document)" : path));
    }
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node k = it->first;
      const std::string name = k.IsScalar() ? k.Scalar() : "";
      bool ok = false;
      for (const auto& n : known) ok = ok || n == name;
      if (!ok) {
        return error(k.Mark(), fmt::format("unknown key '{}{}'{}; known: {}",
                                           path.empty() ? "" : path + ".", name,
                                           util::did_you_mean(name, known),
                                           fmt::join(known, ", ")));
      }
    }
    return {};
  }

  util::Result<double> number(const YAML::Node& v, const std::string& path, double min,
                              double max) const {
    if (!v.IsScalar()) return error(v.Mark(), fmt::format("'{}': expected a number", path));
    const std::string s = v.Scalar();
    const auto parsed = util::parse_double(s);
    if (!parsed) {
      return error(v.Mark(), fmt::format("'{}': expected a number, got '{}'", path, s));
    }
    const double d = *parsed;
    if (d < min || d > max) {
      return error(v.Mark(),
                   fmt::format("'{}': {} is out of range ({} to {})", path, s, min, max));
    }
    return d;
  }

  util::Result<bool> boolean(const YAML::Node& v, const std::string& path) const {
    if (v.IsScalar()) {
      const std::string s = v.Scalar();
      if (s == "true") return true;
      if (s == "false") return false;
    }
    return error(v.Mark(), fmt::format("'{}': expected true or false", path));
  }

  // {warn: X, fail: Y}; `higher_is_worse` says which way round warn and fail must be.
  util::Status limit(const YAML::Node& v, const std::string& path, bool higher_is_worse,
                     double max, Limit& out) const {
    if (auto st = keys(v, path, {"warn", "fail"}); !st) return st;
    for (const char* k : {"warn", "fail"}) {
      if (!v[k]) continue;
      auto d = number(v[k], path + "." + k, 0, max);
      if (!d) return d.error();
      (std::string(k) == "warn" ? out.warn : out.fail) = *d;
    }
    const bool bad = higher_is_worse ? out.warn > out.fail : out.warn < out.fail;
    if (bad) {
      return error(v.Mark(), fmt::format("'{}': warn ({}) must be {} than fail ({})", path,
                                         out.warn, higher_is_worse ? "lower" : "higher",
                                         out.fail));
    }
    return {};
  }

 private:
  const std::string& file_;
};

}  // namespace

util::Result<Thresholds> parse_thresholds(std::string_view text, const std::string& file) {
  Reader r(file);
  YAML::Node doc;
  try {
    doc = YAML::Load(std::string(text));
  } catch (const YAML::ParserException& e) {
    return r.error(e.mark, e.msg);
  }
  Thresholds t;
  if (doc.IsNull()) return t;  // an empty file: every default
  if (auto st = r.keys(doc, "", {"host", "link", "all_reduce"}); !st) return st.error();

  if (const YAML::Node h = doc["host"]) {
    if (auto st = r.keys(h, "host",
                         {"clock_skew_max_s", "free_memory_min_gib", "free_disk_min_gib",
                          "macos_min_version", "rdma_required"});
        !st) {
      return st.error();
    }
    struct Num {
      const char* key;
      double* dst;
      double max;
    } nums[] = {{"clock_skew_max_s", &t.clock_skew_max_s, 3600},
                {"free_memory_min_gib", &t.free_memory_min_gib, 1 << 20},
                {"free_disk_min_gib", &t.free_disk_min_gib, 1 << 20}};
    for (auto& n : nums) {
      if (!h[n.key]) continue;
      auto d = r.number(h[n.key], std::string("host.") + n.key, 0, n.max);
      if (!d) return d.error();
      *n.dst = *d;
    }
    if (const YAML::Node v = h["macos_min_version"]) {
      if (!v.IsScalar() || v.Scalar().empty()) {
        return r.error(v.Mark(), "'host.macos_min_version': expected a version like \"26.2\"");
      }
      t.macos_min_version = v.Scalar();
    }
    if (const YAML::Node v = h["rdma_required"]) {
      auto b = r.boolean(v, "host.rdma_required");
      if (!b) return b.error();
      t.rdma_required = *b;
    }
  }
  if (const YAML::Node l = doc["link"]) {
    if (auto st = r.keys(l, "link",
                         {"min_speed_gbps", "latency_p99_us", "bandwidth_gbps",
                          "bandwidth_baseline_percent"});
        !st) {
      return st.error();
    }
    if (const YAML::Node v = l["min_speed_gbps"]) {
      auto d = r.number(v, "link.min_speed_gbps", 0, 1000);
      if (!d) return d.error();
      t.link_min_speed_gbps = static_cast<int>(*d);
    }
    if (const YAML::Node v = l["latency_p99_us"]) {
      if (auto st = r.limit(v, "link.latency_p99_us", true, 1e9, t.latency_p99_us); !st) {
        return st.error();
      }
    }
    if (const YAML::Node v = l["bandwidth_gbps"]) {
      if (auto st = r.limit(v, "link.bandwidth_gbps", false, 1e6, t.bandwidth_gbps); !st) {
        return st.error();
      }
    }
    if (const YAML::Node v = l["bandwidth_baseline_percent"]) {
      if (auto st = r.limit(v, "link.bandwidth_baseline_percent", false, 1000,
                            t.bandwidth_baseline_percent);
          !st) {
        return st.error();
      }
    }
  }
  if (const YAML::Node a = doc["all_reduce"]) {
    if (auto st = r.keys(a, "all_reduce", {"size_bytes", "busbw_gbps", "busbw_baseline_percent"});
        !st) {
      return st.error();
    }
    if (const YAML::Node v = a["size_bytes"]) {
      auto d = r.number(v, "all_reduce.size_bytes", 8, 1 << 30);
      if (!d) return d.error();
      t.all_reduce_size_bytes = static_cast<std::int64_t>(*d);
    }
    if (const YAML::Node v = a["busbw_gbps"]) {
      if (auto st = r.limit(v, "all_reduce.busbw_gbps", false, 1e6, t.busbw_gbps); !st) {
        return st.error();
      }
    }
    if (const YAML::Node v = a["busbw_baseline_percent"]) {
      if (auto st =
              r.limit(v, "all_reduce.busbw_baseline_percent", false, 1000, t.busbw_baseline_percent);
          !st) {
        return st.error();
      }
    }
  }
  return t;
}

util::Result<Thresholds> load_thresholds(const std::string& file) {
  auto text = util::read_file(file);
  if (!text) return text.error();
  return parse_thresholds(*text, file);
}

Thresholds lab_thresholds() {
  Thresholds t;
  t.latency_p99_us = {50000, 200000};
  t.bandwidth_gbps = {0.2, 0.05};
  t.bandwidth_baseline_percent = {50, 25};
  t.all_reduce_size_bytes = 4 << 20;
  t.busbw_gbps = {0.1, 0.02};
  return t;
}

}  // namespace cc::healthcheck
