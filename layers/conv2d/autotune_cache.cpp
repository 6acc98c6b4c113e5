// layers/conv2d/autotune_cache.cpp: Note [Autotune cache] (layers/conv2d/autotune_cache.h).
#include "layers/conv2d/autotune_cache.h"

#include <climits>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>

#include "tensor/atomic_file.h"
#include "tensor/error.h"
#include "tensor/input_file.h"
#include "tensor/json_error.h"

namespace glassbox {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kKind = "glassbox.autotune";
constexpr int kVersion = 2;
// A cache holds a few entries per convolution shape of the networks run
// with it: kilobytes. The limit only bounds what a wrong path could make us read.
constexpr uint64_t kMaxFileBytes = uint64_t{64} << 20;

std::string dims(const std::vector<int64_t>& shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i) text += cat(i == 0 ? "" : "x", shape[i]);
  return text;
}

[[noreturn]] void bad_file(const std::string& path, const std::string& what) {
  throw DataError(cat(path, ": not a Glassbox autotune cache (", kKind, " v", kVersion, "): ", what));
}

// A result's engine configuration: {"index", "knobs", "numerical_notes", "behavior_notes"}.
EngineConfig parse_engine(const Json& engine, const std::string& path, const std::string& where) {
  const std::string at = cat(where, ": \"engine\"");
  if (!engine.is_object()) bad_file(path, cat(at, " is a JSON ", engine.type_name(), ", not an object"));
  auto count = [&](const char* name, int64_t max) {
    const auto it = engine.find(name);
    if (it == engine.end()) bad_file(path, cat(at, " has no \"", name, "\""));
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > max) {
      bad_file(path, cat(at, ": \"", name, "\" is not an integer from 0 to ", max));
    }
    return it->get<int64_t>();
  };
  EngineConfig config;
  config.engine = count("index", INT32_MAX);
  config.numerical_notes = static_cast<uint32_t>(count("numerical_notes", UINT32_MAX));
  config.behavior_notes = static_cast<uint32_t>(count("behavior_notes", UINT32_MAX));
  const auto knobs = engine.find("knobs");
  if (knobs == engine.end() || !knobs->is_array()) bad_file(path, cat(at, ": \"knobs\" is not a list"));
  for (const Json& knob : *knobs) {
    if (!knob.is_array() || knob.size() != 2 || !knob[0].is_number_integer() || !knob[1].is_number_integer() ||
        knob[0].get<int64_t>() < 0 || knob[0].get<int64_t>() > INT32_MAX) {
      bad_file(path, cat(at, ": a knob is not [TYPE, VALUE], two integers: ", excerpt(knob.dump(), 40)));
    }
    config.knobs.emplace_back(knob[0].get<int>(), knob[1].get<int64_t>());
  }
  return config;
}

// One result of an entry, every field present and of its type.
MeasuredAlgorithm parse_result(const Json& item, const std::string& path, const std::string& key, size_t index) {
  const std::string where = cat("entry '", excerpt(key, 80), "', result ", index);
  if (!item.is_object()) bad_file(path, cat(where, " is a JSON ", item.type_name(), ", not an object"));
  auto field = [&](const char* name) -> const Json& {
    const auto it = item.find(name);
    if (it == item.end()) bad_file(path, cat(where, " has no \"", name, "\""));
    return *it;
  };
  auto integer = [&](const char* name) {
    const Json& v = field(name);
    if (!v.is_number_integer()) bad_file(path, cat(where, ": \"", name, "\" is not an integer"));
    return v;
  };
  MeasuredAlgorithm r;
  r.algo = integer("algo").get<int>();
  r.status = integer("status").get<int>();
  r.math = integer("math").get<int>();
  const Json& memory = integer("memory");
  if (memory.is_number_unsigned() || memory.get<int64_t>() >= 0) {
    r.memory = memory.get<uint64_t>();
  } else {
    bad_file(path, cat(where, ": \"memory\" is negative"));
  }
  const Json& ms = field("ms");
  if (!ms.is_number()) bad_file(path, cat(where, ": \"ms\" is not a number"));
  r.time_ms = ms.get<float>();
  const Json& deterministic = field("deterministic");
  if (!deterministic.is_boolean()) bad_file(path, cat(where, ": \"deterministic\" is not true or false"));
  r.deterministic = deterministic.get<bool>();
  if (const auto engine = item.find("engine"); engine != item.end()) r.engine = parse_engine(*engine, path, where);
  return r;
}

// The run's open caches, by path.
struct Registry {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<AutotuneCache>> caches;
};
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

std::string ConvProblem::key() const {
  return cat(device, " | cuDNN ", cudnn, " | ", pass, " | ", data, " ", layout, " | x ", dims(x), " w ", dims(w),
             " y ", dims(y), " | pad ", pad_h, "x", pad_w, " stride ", stride_h, "x", stride_w, " dilation ",
             dilation_h, "x", dilation_w, " groups ", groups, " | math ", math, " | ", candidates, " | workspace limit ",
             workspace_limit, fused_bias_relu ? " | fused bias+ReLU" : "", deterministic ? " | deterministic" : "");
}

std::string autotune_json(const std::map<std::string, std::vector<MeasuredAlgorithm>>& entries) {
  Json all = Json::object();
  for (const auto& [key, results] : entries) {
    Json list = Json::array();
    for (const MeasuredAlgorithm& r : results) {
      Json item = {{"algo", r.algo}, {"status", r.status}, {"ms", r.time_ms}, {"memory", r.memory},
                   {"math", r.math}, {"deterministic", r.deterministic}};
      if (r.is_engine()) {
        Json knobs = Json::array();
        for (const auto& [type, value] : r.engine.knobs) knobs.push_back({type, value});
        item["engine"] = {{"index", r.engine.engine},
                          {"knobs", std::move(knobs)},
                          {"numerical_notes", r.engine.numerical_notes},
                          {"behavior_notes", r.engine.behavior_notes}};
      }
      list.push_back(std::move(item));
    }
    all[key] = std::move(list);
  }
  const Json document = {{"kind", kKind}, {"version", kVersion}, {"entries", std::move(all)}};
  return document.dump(1) + "\n";
}

std::map<std::string, std::vector<MeasuredAlgorithm>> parse_autotune_json(const std::string& text,
                                                                         const std::string& path) {
  Json document;
  try {
    document = Json::parse(text);
  } catch (const Json::parse_error& e) {
    bad_file(path, cat("not JSON: at byte ", e.byte, ": ", json_error_reason(e.what())));
  }
  if (!document.is_object()) bad_file(path, cat("the document is a JSON ", document.type_name(), ", not an object"));
  const auto kind = document.find("kind");
  if (kind == document.end() || !kind->is_string() || kind->get<std::string>() != kKind) {
    bad_file(path, "its \"kind\" is not \"glassbox.autotune\"");
  }
  const auto version = document.find("version");
  if (version == document.end() || !version->is_number_integer() || version->get<int64_t>() != kVersion) {
    if (version != document.end() && version->is_number_integer() && version->get<int64_t>() == 1) {
      bad_file(path, "its \"version\" is 1, which holds the legacy algorithms only; remove the file, and the "
                     "next search measures the graph API's engine configurations too");
    }
    bad_file(path, cat("its \"version\" is not ", kVersion));
  }
  const auto entries = document.find("entries");
  if (entries == document.end() || !entries->is_object()) bad_file(path, "its \"entries\" is not an object");
  std::map<std::string, std::vector<MeasuredAlgorithm>> parsed;
  for (const auto& [key, list] : entries->items()) {
    if (!list.is_array()) bad_file(path, cat("entry '", excerpt(key, 80), "' is not a list of results"));
    std::vector<MeasuredAlgorithm>& results = parsed[key];
    for (size_t i = 0; i < list.size(); ++i) results.push_back(parse_result(list[i], path, key, i));
  }
  return parsed;
}

AutotuneCache& AutotuneCache::open(const std::string& path) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  std::unique_ptr<AutotuneCache>& cache = r.caches[path];
  if (cache) return *cache;
  auto fresh = std::unique_ptr<AutotuneCache>(new AutotuneCache(path));
  std::error_code ignored;  // a path that cannot be examined is read below, which names why
  if (!path.empty() && std::filesystem::exists(path, ignored)) {
    fresh->entries_ = parse_autotune_json(read_regular_file(path, kMaxFileBytes, "an autotune cache"), path);
  }
  cache = std::move(fresh);
  return *cache;
}

void AutotuneCache::close_all() {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  r.caches.clear();
}

const std::vector<MeasuredAlgorithm>* AutotuneCache::find(const std::string& key) const {
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

void AutotuneCache::insert(const std::string& key, std::vector<MeasuredAlgorithm> results) {
  entries_[key] = std::move(results);
  if (!path_.empty()) write_file_atomically(path_, autotune_json(entries_));
}

}  // namespace glassbox
