// tools/cli/time_json.h: `glassbox time NET --json FILE`, the per-layer,
// per-pass timings with their analytic FLOPs and bytes, for reports that draw
// them (an HTML roofline). Schema "glassbox.time", version 1:
//   {"kind": "glassbox.time", "version": 1, "network", "batch", "device", "device_name",
//    "runtime": {RuntimeInfo::fields(), as strings},
//    "peak": {"flops_per_s", "bytes_per_s", "source", "measured_flops_per_s", "measured_bytes_per_s"},
//    "phase": "training" (forward + backward) or "inference" (a forward-only graph),
//    "steps", "step_ms", "images_per_s",
//    with --cuda-graph: "replayed_step_ms", "graph_nodes" (the same steps replayed as CUDA graphs),
//    "layers": [{"name", "type", "output", "passes": [{"pass": pass_name(), "ms", "flops", "bytes"}]}],
//    "memory": {"parameters", "gradients", "optimizer_state", "activations",
//               "activation_gradients", "workspace", "other", "peak"},  (bytes, the timed steps' peaks)
//    "machine": {machine_fields(): clocks, energy, ... as strings}}
// Add fields freely; renaming or removing one is a new version.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "tensor/allocator.h"
#include "tensor/device_peaks.h"
#include "tensor/runtime_info.h"

namespace glassbox::cli {

struct TimeRun {
  std::string network;
  int batch = 0;
  int steps = 0;
  double step_ms = 0.0;
  RuntimeInfo info;
  RooflinePeak peak;
  MemoryStats memory;
  std::vector<std::pair<std::string, std::string>> machine;  // tensor/machine_state.h, over the timed steps
  bool inference = false;  // --inference: the forward of a graph compiled for inference
  // --cuda-graph: the mean step replayed as one CUDA graph launch, and its
  // nodes; 0 without.
  double replayed_step_ms = 0.0;
  size_t graph_nodes = 0;
  // What the rate counts: "images", or a language model's "tokens" (a
  // sample's window of them): the document's images_per_s or tokens_per_s.
  std::string item = "images";
  int64_t items_per_sample = 1;
};

// The document, indented, ending in a newline.
std::string time_json(const TimeRun& run, const Graph& graph, const std::vector<LayerTime>& mean);

}  // namespace glassbox::cli
