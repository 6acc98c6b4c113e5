// graph/chrome_trace.cpp
#include "graph/chrome_trace.h"

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "tensor/error.h"

namespace glassbox {
namespace {

constexpr int kProcessId = 1;

void check_event(const TraceEvent& event, size_t index, const std::set<int>& tracks) {
  const auto where = [&] { return cat("chrome trace: event ", index, " (", event.name, ")"); };
  if (!std::isfinite(event.start_us) || !std::isfinite(event.duration_us) || event.start_us < 0 ||
      event.duration_us < 0) {
    throw Error(cat(where(), ": start ", event.start_us, " us and duration ", event.duration_us,
                    " us must be finite and not negative"));
  }
  if (!tracks.contains(event.track)) throw Error(cat(where(), ": track ", event.track, " was not declared"));
}

nlohmann::json metadata_event(const char* what, int track, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", kProcessId}, {"tid", track}, {"args", {{"name", name}}}};
}

}  // namespace

std::string to_chrome_json(const ChromeTrace& trace) {
  std::set<int> track_ids;
  nlohmann::json events = nlohmann::json::array();
  events.push_back(metadata_event("process_name", 0, trace.process));
  for (const TraceTrack& track : trace.tracks) {
    track_ids.insert(track.id);
    events.push_back(metadata_event("thread_name", track.id, track.name));
    // Tracks appear in the order declared, not sorted by name.
    events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", kProcessId}, {"tid", track.id},
                      {"args", {{"sort_index", static_cast<int>(events.size())}}}});
  }
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& event = trace.events[i];
    check_event(event, i, track_ids);
    nlohmann::json args = nlohmann::json::object();
    for (const auto& [key, value] : event.text_args) args[key] = value;
    for (const auto& [key, value] : event.number_args) args[key] = value;
    events.push_back({{"name", event.name}, {"cat", event.category}, {"ph", "X"}, {"ts", event.start_us},
                      {"dur", event.duration_us}, {"pid", kProcessId}, {"tid", event.track}, {"args", args}});
  }
  nlohmann::json other = nlohmann::json::object();
  for (const auto& [key, value] : trace.text_metadata) other[key] = value;
  for (const auto& [key, value] : trace.number_metadata) {
    // Whole numbers (the batch) as integers, so readers that want one get one.
    const bool whole = std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 9e15;
    if (whole) {
      other[key] = static_cast<int64_t>(value);
    } else {
      other[key] = value;
    }
  }
  const nlohmann::json document = {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", other}};
  return document.dump(1) + "\n";
}

}  // namespace glassbox
