#include "healthcheck/baseline.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/atomic_file.h"
#include "util/json_text.h"

namespace cc::healthcheck {
namespace {

using util::ExitCode;

// Lower-is-worse judgement of `v` against a limit.
Status below(double v, const Limit& l) {
  if (v < l.fail) return Status::kFail;
  if (v < l.warn) return Status::kWarn;
  return Status::kPass;
}

// A check of a bandwidth-like figure against an absolute limit and, when known, a baseline.
CheckResult judge_rate(Scope scope, const std::string& subject, const char* check, const char* what,
                       double v, const Limit& abs, const Limit& pct, std::optional<double> base,
                       const discovery::FixCommand& fix) {
  CheckResult r;
  r.scope = scope;
  r.subject = subject;
  r.check = check;
  r.value = v;
  r.unit = "Gb/s";
  r.measured = fmt::format("{:.2f} Gb/s", v);
  r.threshold = fmt::format(">= {:g} Gb/s (warn {:g})", abs.fail, abs.warn);
  r.status = below(v, abs);
  const std::string name = scope == Scope::kCable ? "cable " + subject : std::string("cluster");
  r.detail = fmt::format("{} {} {:.2f} Gb/s", name, what, v);
  if (r.status != Status::kPass) {
    r.detail = fmt::format("{} {} {:.2f} Gb/s is below {:g} Gb/s", name, what, v,
                           r.status == Status::kFail ? abs.fail : abs.warn);
  }
  if (base && *base > 0) {
    const double percent = v / *base * 100.0;
    r.threshold += fmt::format(", >= {:g}% of baseline {:.2f}", pct.fail, *base);
    const Status rel = below(percent, pct);
    if (rel > r.status || (rel != Status::kPass && r.status == Status::kPass)) {
      r.detail = fmt::format("{} {} {:.0f}% below baseline ({:.2f} Gb/s, baseline {:.2f} Gb/s)",
                             name, what, 100.0 - percent, v, *base);
    } else {
      r.detail += fmt::format(" ({:.0f}% of baseline {:.2f} Gb/s)", percent, *base);
    }
    r.status = std::max(r.status, rel);
  }
  if (r.status != Status::kPass) {
    r.fix = scope == Scope::kCable
                ? fmt::format("reseat or replace the cable {}; check `{}`", subject,
                              fix.command("health", "--quick"))
                : "find the slow cable in the per-cable results and reseat or replace it";
  }
  return r;
}

}  // namespace

Baseline baseline_from(const Report& r, const std::string& created_at,
                       std::int64_t all_reduce_size_bytes) {
  Baseline b;
  b.created_at = created_at;
  for (const auto& c : r.results) {
    if (!c.value) continue;
    if (c.scope == Scope::kCable && c.check == "latency") {
      b.cables[c.subject].latency_p99_us = *c.value;
    } else if (c.scope == Scope::kCable && c.check == "bandwidth") {
      b.cables[c.subject].bandwidth_gbps = *c.value;
    } else if (c.scope == Scope::kCluster && c.check == "all-reduce-busbw") {
      b.busbw_gbps = *c.value;
      b.all_reduce_size_bytes = all_reduce_size_bytes;
    }
  }
  return b;
}

std::string baseline_json(const Baseline& b) {
  nlohmann::json j;
  j["schema"] = kBaselineSchema;
  j["created_at"] = b.created_at;
  j["cables"] = nlohmann::json::object();
  for (const auto& [label, l] : b.cables) {
    j["cables"][label] = {{"latency_p99_us", l.latency_p99_us},
                          {"bandwidth_gbps", l.bandwidth_gbps}};
  }
  j["all_reduce"] = nullptr;
  if (b.busbw_gbps) {
    j["all_reduce"] = {{"busbw_gbps", *b.busbw_gbps}, {"size_bytes", b.all_reduce_size_bytes}};
  }
  return util::json_text(j, 2) + "\n";
}

util::Result<Baseline> load_baseline(const std::string& path, std::string_view save_command) {
  auto text = util::read_file(path);
  if (!text) return text.error();
  try {
    const auto j = nlohmann::json::parse(*text);
    if (!j.is_object() || j.value("schema", "") != kBaselineSchema) {
      return util::Error{ExitCode::kUsage,
                         fmt::format("{}: not a health baseline (schema {}): make one with "
                                     "`{}`",
                                     path, kBaselineSchema, save_command)};
    }
    Baseline b;
    b.created_at = j.value("created_at", "");
    for (const auto& [label, l] : j.at("cables").items()) {
      b.cables[label] = {l.at("latency_p99_us").get<double>(),
                         l.at("bandwidth_gbps").get<double>()};
    }
    if (j.contains("all_reduce") && j["all_reduce"].is_object()) {
      b.busbw_gbps = j["all_reduce"].at("busbw_gbps").get<double>();
      b.all_reduce_size_bytes = j["all_reduce"].value("size_bytes", std::int64_t{0});
    }
    return b;
  } catch (const nlohmann::json::exception& e) {
    return util::Error{ExitCode::kUsage,
                       fmt::format("{}: not a valid health baseline: {}", path, e.what())};
  }
}

util::OwnOutput baseline_output() {
  return {fmt::format("a health baseline (the JSON `health --save-baseline` writes, schema {})",
                      kBaselineSchema),
          [](std::string_view text) {
            const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
            return j.is_object() && j.value("schema", nlohmann::json()) == kBaselineSchema;
          }};
}

util::Status save_baseline(const Baseline& b, const std::string& path) {
  return util::write_file_atomic(path, baseline_json(b));
}

std::vector<CheckResult> judge_link(const std::string& label, const LinkFigures& f,
                                    const Thresholds& t, const Baseline* base,
                                    const discovery::FixCommand& fix) {
  std::vector<CheckResult> out;
  const BaselineLink* bl = nullptr;
  if (base != nullptr) {
    auto it = base->cables.find(label);
    if (it != base->cables.end()) bl = &it->second;
  }
  CheckResult lat;
  lat.scope = Scope::kCable;
  lat.subject = label;
  lat.check = "latency";
  lat.value = f.latency_p99_us;
  lat.unit = "us";
  lat.measured = fmt::format("p99 {:.1f} us (p50 {:.1f})", f.latency_p99_us, f.latency_p50_us);
  lat.threshold = fmt::format("<= {:g} us (warn {:g})", t.latency_p99_us.fail,
                              t.latency_p99_us.warn);
  lat.detail = fmt::format("cable {} latency p99 {:.1f} us one way", label, f.latency_p99_us);
  if (f.latency_p99_us > t.latency_p99_us.fail) {
    lat.status = Status::kFail;
  } else if (f.latency_p99_us > t.latency_p99_us.warn) {
    lat.status = Status::kWarn;
  }
  if (lat.status != Status::kPass) {
    lat.detail += fmt::format(" is above {:g} us", lat.status == Status::kFail
                                                      ? t.latency_p99_us.fail
                                                      : t.latency_p99_us.warn);
    lat.fix = fmt::format("check what else runs on the hosts of cable {}, and the cable", label);
  }
  if (bl != nullptr) lat.detail += fmt::format(" (baseline {:.1f} us)", bl->latency_p99_us);
  out.push_back(lat);
  out.push_back(judge_rate(Scope::kCable, label, "bandwidth", "bandwidth", f.bandwidth_gbps,
                           t.bandwidth_gbps, t.bandwidth_baseline_percent,
                           bl ? std::optional<double>(bl->bandwidth_gbps) : std::nullopt, fix));
  CheckResult data;
  data.scope = Scope::kCable;
  data.subject = label;
  data.check = "data";
  data.value = static_cast<double>(f.wrong);
  data.measured = fmt::format("{} wrong", f.wrong);
  data.threshold = "0 wrong";
  data.detail = fmt::format("cable {}: {} elements arrived wrong", label, f.wrong);
  if (f.wrong > 0) {
    data.status = Status::kFail;
    data.fix = fmt::format("replace the cable {}: data arrived corrupted", label);
  }
  out.push_back(data);
  return out;
}

std::vector<CheckResult> judge_all_reduce(const AllReduceFigures& f, int hosts, const Thresholds& t,
                                          const Baseline* base, const discovery::FixCommand& fix) {
  std::vector<CheckResult> out;
  CheckResult data;
  data.scope = Scope::kCluster;
  data.subject = "cluster";
  data.check = "all-reduce-data";
  data.value = static_cast<double>(f.wrong);
  data.measured = fmt::format("{} wrong", f.wrong);
  data.threshold = "0 wrong";
  data.detail = fmt::format("all_reduce over {} hosts, {} run{}: {} wrong elements", hosts,
                            f.runs, f.runs == 1 ? "" : "s", f.wrong);
  if (f.wrong > 0) {
    data.status = Status::kFail;
    data.fix = fmt::format("run the per-cable checks (`{}`) to find the corrupting cable",
                           fix.command("health"));
  }
  out.push_back(data);
  CheckResult busbw = judge_rate(Scope::kCluster, "cluster", "all-reduce-busbw",
                                 "all_reduce busbw", f.busbw_gbps, t.busbw_gbps,
                                 t.busbw_baseline_percent, base ? base->busbw_gbps : std::nullopt,
                                 fix);
  if (f.runs > 1) busbw.detail += fmt::format(" (the lowest of {} runs)", f.runs);
  out.push_back(busbw);
  return out;
}

}  // namespace cc::healthcheck
