#include "healthcheck/thresholds.h"

#include <cmath>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "util/atomic_file.h"
#include "util/yaml_reader.h"

namespace cc::healthcheck {
namespace {

using util::Field;
using util::YamlReader;

// {warn: X, fail: Y}, each in [0, max]; `higher_is_worse` says which way round warn and fail
// must be.
util::Status limit(const YamlReader& r, const Field& f, bool higher_is_worse, double max,
                   Limit& out) {
  auto fields = r.mapping(f, {"warn", "fail"});
  if (!fields) return fields.error();
  for (const Field& k : *fields) {
    auto d = r.number(k, 0, max);
    if (!d) return d.error();
    (k.key == "warn" ? out.warn : out.fail) = *d;
  }
  const bool bad = higher_is_worse ? out.warn > out.fail : out.warn < out.fail;
  if (bad) {
    return r.error(f.mark(), fmt::format("'{}': warn ({}) must be {} than fail ({})", f.path,
                                         out.warn, higher_is_worse ? "lower" : "higher", out.fail));
  }
  return {};
}

// Stores a value that was read, or keeps its error.
template <class T, class Dst>
void keep(util::Result<T> v, Dst& dst, std::vector<util::Error>& errors) {
  if (v) {
    dst = static_cast<Dst>(*v);
  } else {
    errors.push_back(v.error());
  }
}

void keep(const util::Status& st, std::vector<util::Error>& errors) {
  if (!st) errors.push_back(st.error());
}

util::Status host(const YamlReader& r, const Field& section, Thresholds& t,
                  std::vector<util::Error>& errors) {
  auto fields = r.mapping(section,
                          {"clock_skew_max_s", "free_memory_min_gib", "free_disk_min_gib",
                           "macos_min_version", "rdma_required"},
                          errors);
  if (!fields) return fields.error();
  for (const Field& f : *fields) {
    if (f.key == "clock_skew_max_s") keep(r.number(f, 0, 3600), t.clock_skew_max_s, errors);
    if (f.key == "free_memory_min_gib") {
      keep(r.number(f, 0, 1 << 20), t.free_memory_min_gib, errors);
    }
    if (f.key == "free_disk_min_gib") keep(r.number(f, 0, 1 << 20), t.free_disk_min_gib, errors);
    if (f.key == "macos_min_version") keep(r.nonempty_string(f), t.macos_min_version, errors);
    if (f.key == "rdma_required") keep(r.boolean(f), t.rdma_required, errors);
  }
  return {};
}

util::Status link(const YamlReader& r, const Field& section, Thresholds& t,
                  std::vector<util::Error>& errors) {
  auto fields = r.mapping(
      section, {"min_speed_gbps", "latency_p99_us", "bandwidth_gbps", "bandwidth_baseline_percent"},
      errors);
  if (!fields) return fields.error();
  for (const Field& f : *fields) {
    if (f.key == "min_speed_gbps") keep(r.integer(f, 0, 1000), t.link_min_speed_gbps, errors);
    if (f.key == "latency_p99_us") keep(limit(r, f, true, 1e9, t.latency_p99_us), errors);
    if (f.key == "bandwidth_gbps") keep(limit(r, f, false, 1e6, t.bandwidth_gbps), errors);
    if (f.key == "bandwidth_baseline_percent") {
      keep(limit(r, f, false, 1000, t.bandwidth_baseline_percent), errors);
    }
  }
  return {};
}

util::Status all_reduce(const YamlReader& r, const Field& section, Thresholds& t,
                        std::vector<util::Error>& errors) {
  auto fields = r.mapping(section, {"size_bytes", "busbw_gbps", "busbw_baseline_percent"}, errors);
  if (!fields) return fields.error();
  for (const Field& f : *fields) {
    if (f.key == "size_bytes") {
      keep(r.integer(f, 8, 1 << 30, "a whole number of bytes"), t.all_reduce_size_bytes, errors);
    }
    if (f.key == "busbw_gbps") keep(limit(r, f, false, 1e6, t.busbw_gbps), errors);
    if (f.key == "busbw_baseline_percent") {
      keep(limit(r, f, false, 1000, t.busbw_baseline_percent), errors);
    }
  }
  return {};
}

}  // namespace

util::Result<Thresholds> parse_thresholds(std::string_view text, const std::string& file) {
  const YamlReader r(file, "the thresholds");
  auto doc = r.load(text);
  if (!doc) return doc.error();
  Thresholds t;
  if (doc->IsNull()) return t;  // an empty file: every default
  // Every mistake of the file at once: each section is read on its own.
  std::vector<util::Error> errors;
  auto sections = r.mapping(YamlReader::root(*doc), {"host", "link", "all_reduce"}, errors);
  if (!sections) return sections.error();
  for (const Field& s : *sections) {
    auto read = s.key == "host" ? host : s.key == "link" ? link : all_reduce;
    if (auto st = read(r, s, t, errors); !st) errors.push_back(st.error());
  }
  if (!errors.empty()) return YamlReader::all(r.in_file_order(std::move(errors)));
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
