// tools/cli/layer_means.h: per-layer times averaged over timed steps (`time`, `scale`).
#pragma once

#include <vector>

#include "graph/graph.h"

namespace glassbox::cli {

// Adds the last step's layer times (graph.layer_times(), which waits for the
// device) to `means`, each divided by `steps`: after `steps` calls, the means.
inline void add_layer_times(const Graph& graph, int steps, std::vector<LayerTime>& means) {
  const std::vector<LayerTime> times = graph.layer_times();
  if (means.empty()) means.assign(times.size(), LayerTime{});
  for (size_t i = 0; i < times.size(); ++i) {
    means[i].node = times[i].node;
    means[i].forward_ms += times[i].forward_ms / steps;
    means[i].backward_ms += times[i].backward_ms / steps;
    means[i].backward_weights_ms += times[i].backward_weights_ms / steps;
  }
}

}  // namespace glassbox::cli
