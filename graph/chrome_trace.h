// graph/chrome_trace.h: a trace in the Chrome Trace Event Format (the JSON
// object form), which Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
// Every event here is a complete event ("ph": "X": a start and a duration,
// in microseconds) on a track: a thread of the one process, named by a
// metadata event. `glassbox trace` (tools/cli/trace.cpp) puts a step's layer
// spans on one track and, on a GPU, the kernels under them on one track per
// stream. The writer only formats: it checks that the events are well formed
// and names the first that is not.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace glassbox {

struct TraceEvent {
  std::string name;      // "conv1 forward"
  std::string category;  // "forward", "kernel": Perfetto filters and colours by it
  double start_us = 0.0;
  double duration_us = 0.0;
  int track = 0;         // a TraceTrack's id
  std::vector<std::pair<std::string, std::string>> text_args;  // shown when the event is selected
  std::vector<std::pair<std::string, double>> number_args;
};

struct TraceTrack {
  int id = 0;
  std::string name;  // "host (layers)", "stream 7 (kernels)"
};

struct ChromeTrace {
  std::string process;  // "glassbox trace VGG16"
  std::vector<TraceTrack> tracks;
  std::vector<TraceEvent> events;
  // "otherData": what the trace was taken of (network, device, batch, ...).
  std::vector<std::pair<std::string, std::string>> text_metadata;
  std::vector<std::pair<std::string, double>> number_metadata;
};

// The JSON text. Throws Error naming the event for a negative or non-finite
// time, or a track that was not declared.
std::string to_chrome_json(const ChromeTrace& trace);

}  // namespace glassbox
