// tools/cli/roofline.cpp
#include "tools/cli/roofline.h"

#include <algorithm>

namespace glassbox::cli {

double flops_per_s(const PassCost& cost) {
  return cost.ms > 0.0 ? static_cast<double>(cost.flops) / (cost.ms / 1e3) : 0.0;
}

double bytes_per_s(const PassCost& cost) {
  return cost.ms > 0.0 ? static_cast<double>(cost.bytes) / (cost.ms / 1e3) : 0.0;
}

double intensity(const PassCost& cost) {
  return cost.bytes > 0 ? static_cast<double>(cost.flops) / static_cast<double>(cost.bytes) : 0.0;
}

double attainable_flops_per_s(const PassCost& cost, const Peak& peak) {
  return std::min(peak.flops_per_s, intensity(cost) * peak.bytes_per_s);
}

double roofline_fraction(const PassCost& cost, const Peak& peak) {
  if (cost.ms <= 0.0 || peak.flops_per_s <= 0.0 || peak.bytes_per_s <= 0.0) return 0.0;
  const double least_seconds = std::max(static_cast<double>(cost.flops) / peak.flops_per_s,
                                        static_cast<double>(cost.bytes) / peak.bytes_per_s);
  return least_seconds / (cost.ms / 1e3);
}

std::vector<PassCost> layer_passes(const Graph& graph, const LayerTime& time) {
  const Node& node = graph.nodes()[static_cast<size_t>(time.node)];
  const Layer& layer = *node.layer;
  auto cost = [&](Pass pass, double ms) { return PassCost{pass, ms, layer.flops(pass), layer.bytes_moved(pass)}; };
  // A ReLU whose producer applies it (graph/fusion.h) moves nothing in its forward.
  std::vector<PassCost> passes = {node.fused_into >= 0 ? PassCost{Pass::kForward, time.forward_ms, 0, 0}
                                                       : cost(Pass::kForward, time.forward_ms)};
  if (graph.compiled_phase() == Phase::kInference) return passes;  // no backward was built
  if (layer.splits_backward()) {
    const bool wants_input_grad = !graph.nodes()[static_cast<size_t>(node.inputs[0])].is_input();
    if (wants_input_grad) passes.push_back(cost(Pass::kBackwardData, time.backward_data_ms()));
    passes.push_back(cost(Pass::kBackwardWeights, time.backward_weights_ms));
  } else if (node.backward_fused_into >= 0) {
    passes.push_back(PassCost{Pass::kBackward, time.backward_ms, 0, 0});  // so is its backward
  } else {
    passes.push_back(cost(Pass::kBackward, time.backward_ms));
  }
  return passes;
}

}  // namespace glassbox::cli
