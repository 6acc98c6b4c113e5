// tools/cli/report_data.h: the three JSON files `glassbox report` reads, as
// plain structs, checked on the way in:
//   "glassbox.time"   glassbox time NET --json F: per-layer, per-pass times,
//                     FLOPs and bytes, the peak, the memory;
//   "glassbox.sweep"  glassbox sweep NET --batches ...: one point per batch,
//                     and the time of the largest batch that fitted;
//   "glassbox.trace"  glassbox trace: a Chrome trace (Trace Event Format) whose
//                     otherData names it; the layer spans are summed per
//                     layer and pass.
// A file that is none of these throws DataError naming the file and the
// problem: not JSON (with nlohmann's offset), an unknown kind (with the known
// ones), a missing field or one of the wrong type (with its path, "layers[2].ms").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace glassbox::cli {

inline constexpr const char* kKnownReportKinds = "glassbox.time, glassbox.sweep, glassbox.trace";

struct PassTime {
  std::string pass;  // forward, backward, backward-data, backward-weights, optimizer
  double ms = 0.0;
  double flops = 0.0;  // 0: not counted
  double bytes = 0.0;
};

struct LayerPasses {
  std::string name;
  std::string type;    // may be empty
  std::string output;  // the output shape as text; may be empty
  std::vector<PassTime> passes;
};

// Where the time and the trace came from; numbers absent from the file are NaN.
struct RunHeader {
  std::string network;
  std::string device;
  std::string device_name;
  int64_t batch = 0;  // 0: not given (a sweep has many)
  std::vector<std::pair<std::string, std::string>> runtime;
};

struct TimeData {
  RunHeader header;
  double peak_flops_per_s = 0.0;  // 0: no peak in the file (no roofline drawn)
  double peak_bytes_per_s = 0.0;
  std::string peak_source;
  bool inference = false;  // "phase": "inference" (`time --inference`): forward-only steps
  int64_t steps = 0;
  double step_ms = 0.0;
  std::string item = "images";  // what items_per_s counts: images, or a language model's tokens
  double items_per_s = 0.0;
  std::vector<LayerPasses> layers;                     // in graph order
  std::vector<std::pair<std::string, double>> memory;  // category -> bytes
};

struct SweepPoint {
  int64_t batch = 0;
  std::string error;  // non-empty: this batch failed
  double step_ms = 0.0;
  double items_per_s = 0.0;
  double peak_bytes = 0.0;
};

struct SweepData {
  RunHeader header;
  std::string item = "images";  // what the points' items_per_s count
  std::vector<SweepPoint> points;
  std::optional<TimeData> largest;
};

struct TraceData {
  RunHeader header;
  double step_ms = 0.0;             // 0: not given
  int steps = 1;                    // optimizer spans in the trace (at least 1); times below are per step
  std::vector<LayerPasses> layers;  // mean per step, in the order the layers first start
  int layer_spans = 0;
  int kernel_events = 0;
  double kernel_ms = 0.0;            // per step
  int copy_events = 0;               // GPU memcpy and memset records
  double copy_ms = 0.0;              // per step
  bool has_flops_and_bytes = false;  // every span with flops also has bytes
};

struct ReportData {
  std::string kind;
  std::optional<TimeData> time;
  std::optional<SweepData> sweep;
  std::optional<TraceData> trace;
};

// Parses `text`, the contents of `file` (named in the errors). Throws DataError.
ReportData read_report_data(std::string_view text, const std::string& file);

}  // namespace glassbox::cli
