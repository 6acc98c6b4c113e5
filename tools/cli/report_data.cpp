// tools/cli/report_data.cpp: reading the report's JSON files (report_data.h).
#include "tools/cli/report_data.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>

#include "tensor/error.h"
#include "tensor/json_error.h"

namespace glassbox::cli {
namespace {

// ordered_json: the file's order of keys (runtime, memory) is the order shown.
using Json = nlohmann::ordered_json;

// A JSON value with its path from the top ("layers[2].passes[0]") and the
// file, for errors that say where the problem is.
class Field {
 public:
  Field(const Json& value, std::string path, const std::string& file)
      : value_(value), path_(std::move(path)), file_(file) {}

  [[noreturn]] void fail(const std::string& what) const { throw DataError(cat(file_, ": ", what)); }

  const Json& value() const { return value_; }
  bool has(const char* key) const { return value_.is_object() && value_.contains(key) && !value_.at(key).is_null(); }
  Field at(const char* key) const {
    if (!has(key)) fail(cat("field ", child_path(key), " is missing"));
    return Field(value_.at(key), child_path(key), file_);
  }
  Field operator[](size_t i) const { return Field(value_.at(i), cat(path_, "[", i, "]"), file_); }
  size_t size() const { return value_.size(); }

  const Field& expect(bool ok, const char* what) const {
    if (!ok) fail(cat("field ", path_, " must be ", what, ", got ", value_.type_name(), " ", excerpt(value_.dump())));
    return *this;
  }
  const Field& object() const { return expect(value_.is_object(), "an object"); }
  const Field& array() const { return expect(value_.is_array(), "an array"); }
  double number() const { return expect(value_.is_number(), "a number").value_.get<double>(); }
  // A whole number, written as one or not (a Chrome trace's numeric otherData are all doubles: 8.0).
  int64_t integer() const {
    const double v = value_.is_number() ? value_.get<double>() : 0.5;
    const bool wraps = value_.is_number_unsigned() && value_.get<uint64_t>() > uint64_t{INT64_MAX};
    const bool whole =
        (value_.is_number_integer() && !wraps) || (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9e15);
    return expect(whole, "an integer").value_.get<int64_t>();
  }
  std::string text() const { return expect(value_.is_string(), "a string").value_.get<std::string>(); }

  // Optional fields: the fallback when absent (or null), checked when present.
  double number_or(const char* key, double fallback) const { return has(key) ? at(key).number() : fallback; }
  int64_t integer_or(const char* key, int64_t fallback) const { return has(key) ? at(key).integer() : fallback; }
  std::string text_or(const char* key, std::string fallback) const { return has(key) ? at(key).text() : fallback; }

 private:
  std::string child_path(const char* key) const { return path_.empty() ? key : cat(path_, ".", key); }

  const Json& value_;
  std::string path_;
  const std::string& file_;
};

RunHeader read_header(const Field& top) {
  RunHeader h;
  h.network = top.at("network").text();
  h.device = top.text_or("device", "");
  h.device_name = top.text_or("device_name", "");
  h.batch = top.integer_or("batch", 0);
  if (top.has("runtime")) {
    for (const auto& [key, value] : top.at("runtime").object().value().items()) {
      h.runtime.emplace_back(key, value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  return h;
}

TimeData read_time(const Field& top) {
  TimeData t;
  t.header = read_header(top);
  if (top.has("peak")) {
    const Field peak = top.at("peak").object();
    t.peak_flops_per_s = peak.at("flops_per_s").number();
    t.peak_bytes_per_s = peak.at("bytes_per_s").number();
    t.peak_source = peak.text_or("source", "");
  }
  t.inference = top.text_or("phase", "training") == "inference";
  t.steps = top.integer_or("steps", 0);
  t.step_ms = top.number_or("step_ms", 0.0);
  t.item = top.has("tokens_per_s") ? "tokens" : "images";  // a language model's rate counts tokens
  t.items_per_s = top.number_or((t.item + "_per_s").c_str(), 0.0);
  const Field layers = top.at("layers").array();
  if (layers.size() == 0) top.fail("field layers is empty: a time file has an entry for each layer it timed");
  for (size_t i = 0; i < layers.size(); ++i) {
    const Field layer = layers[i].object();
    LayerPasses l{
        .name = layer.at("name").text(), .type = layer.text_or("type", ""), .output = layer.text_or("output", "")};
    const Field passes = layer.at("passes").array();
    for (size_t k = 0; k < passes.size(); ++k) {
      const Field p = passes[k].object();
      l.passes.push_back({.pass = p.at("pass").text(),
                          .ms = p.at("ms").number(),
                          .flops = p.number_or("flops", 0.0),
                          .bytes = p.number_or("bytes", 0.0)});
    }
    t.layers.push_back(std::move(l));
  }
  if (top.has("memory")) {
    const Field memory = top.at("memory").object();
    for (const auto& [key, value] : memory.value().items()) t.memory.emplace_back(key, memory.at(key.c_str()).number());
  }
  return t;
}

SweepData read_sweep(const Field& top) {
  SweepData s;
  s.header = read_header(top);
  const Field points = top.at("points").array();
  s.item = top.text_or("item", "images");
  if (s.item != "images" && s.item != "tokens") top.fail(cat("field item is '", s.item, "', not images or tokens"));
  if (points.size() == 0) top.fail("field points is empty: a sweep file has an entry for each batch it ran");
  for (size_t i = 0; i < points.size(); ++i) {
    const Field p = points[i].object();
    SweepPoint point{.batch = p.at("batch").integer(), .error = p.text_or("error", "")};
    if (point.error.empty()) {
      point.step_ms = p.at("step_ms").number();
      point.items_per_s = p.at((s.item + "_per_s").c_str()).number();
      point.peak_bytes = p.at("peak_bytes").number();
    }
    s.points.push_back(std::move(point));
  }
  if (top.has("largest")) s.largest = read_time(top.at("largest").object());
  return s;
}

// Layer spans: complete events ("ph":"X") with args.layer, except a GPU's
// device records (cat "kernel", "memcpy", "memset"), which name the span they
// ran in with args.layer too and would count twice.
TraceData read_trace(const Field& top) {
  TraceData t;
  if (top.has("otherData")) {
    const Field other = top.at("otherData").object();
    t.header.network = other.text_or("network", "");
    t.header.device = other.text_or("device", "");
    t.header.device_name = other.text_or("device_name", "");
    t.header.batch = other.integer_or("batch", 0);
    t.step_ms = other.number_or("step_ms", 0.0);
    for (const auto& [key, value] : other.value().items()) {  // glassbox trace writes the runtime as "runtime.KEY"
      if (key.starts_with("runtime.") && value.is_string()) {
        t.header.runtime.emplace_back(key.substr(8), value.get<std::string>());
      }
    }
  }
  struct Sum {
    double first_ts = 0.0;
    LayerPasses layer;
  };
  std::map<std::string, Sum> sums;
  bool flops_without_bytes = false, any_flops = false;
  int optimizer_spans = 0;
  const Field events = top.at("traceEvents").array();
  for (size_t i = 0; i < events.size(); ++i) {
    const Field e = events[i].object();
    if (e.text_or("ph", "") != "X") continue;
    const std::string category = e.text_or("cat", "");
    if (category == "kernel" || category == "memcpy" || category == "memset") {
      (category == "kernel" ? t.kernel_events : t.copy_events) += 1;
      (category == "kernel" ? t.kernel_ms : t.copy_ms) += e.at("dur").number() / 1e3;
      continue;
    }
    if (!e.has("args") || !e.at("args").object().has("layer")) continue;
    const Field args = e.at("args");
    const std::string name = args.at("layer").text();
    const std::string pass = args.text_or("pass", category);
    const double ts = e.at("ts").number(), ms = e.at("dur").number() / 1e3;
    const double flops = args.number_or("flops", 0.0), bytes = args.number_or("bytes", 0.0);
    any_flops = any_flops || flops > 0;
    flops_without_bytes = flops_without_bytes || (flops > 0 && bytes <= 0);
    if (pass == "optimizer") ++optimizer_spans;
    ++t.layer_spans;
    auto [it, added] = sums.try_emplace(name, Sum{.first_ts = ts, .layer = {.name = name}});
    Sum& sum = it->second;
    sum.first_ts = std::min(sum.first_ts, ts);
    if (sum.layer.type.empty()) sum.layer.type = args.text_or("type", "");
    auto p = std::find_if(sum.layer.passes.begin(), sum.layer.passes.end(),
                          [&](const PassTime& q) { return q.pass == pass; });
    if (p == sum.layer.passes.end()) p = sum.layer.passes.insert(p, PassTime{.pass = pass});
    p->ms += ms;
    p->flops += flops;
    p->bytes += bytes;
  }
  if (t.layer_spans == 0) {
    top.fail("no layer spans (\"X\" events with args.layer): not a trace of glassbox trace, or one of no step");
  }
  t.steps = std::max(1, optimizer_spans);
  t.kernel_ms /= t.steps;
  t.copy_ms /= t.steps;
  t.has_flops_and_bytes = any_flops && !flops_without_bytes;
  std::vector<Sum> ordered;
  for (auto& [name, sum] : sums) ordered.push_back(std::move(sum));
  std::stable_sort(ordered.begin(), ordered.end(), [](const Sum& a, const Sum& b) { return a.first_ts < b.first_ts; });
  for (Sum& sum : ordered) {
    for (PassTime& p : sum.layer.passes) {
      p.ms /= t.steps;
      p.flops /= t.steps;
      p.bytes /= t.steps;
    }
    t.layers.push_back(std::move(sum.layer));
  }
  return t;
}

}  // namespace

ReportData read_report_data(std::string_view text, const std::string& file) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::exception& e) {  // a syntax error, or a number too large for a double (out_of_range)
    throw DataError(cat(file, ": not JSON: ", json_error_reason(e.what())));
  }
  const Field top(doc, "", file);
  if (!doc.is_object()) {
    top.fail(cat("not a Glassbox report file: the top level is a JSON ", doc.type_name(),
                 ", not an object; known kinds: ", kKnownReportKinds));
  }
  ReportData data;
  if (top.has("kind")) {
    data.kind = top.at("kind").text();
  } else if (top.has("traceEvents")) {
    data.kind = "glassbox.trace";  // a Chrome trace names its kind in otherData, if at all
    if (top.has("otherData")) data.kind = top.at("otherData").object().text_or("kind", data.kind);
  } else {
    top.fail(
        cat("not a Glassbox report file: no \"kind\" field and no \"traceEvents\"; known kinds: ", kKnownReportKinds));
  }
  if (data.kind == "glassbox.time") {
    data.time = read_time(top);
  } else if (data.kind == "glassbox.sweep") {
    data.sweep = read_sweep(top);
  } else if (data.kind == "glassbox.trace") {
    data.trace = read_trace(top);
  } else {
    top.fail(cat("unknown kind \"", excerpt(data.kind), "\"; known kinds: ", kKnownReportKinds));
  }
  return data;
}

}  // namespace glassbox::cli
