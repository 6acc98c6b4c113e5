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

PassCost pass_cost(const Graph& graph, int index, Pass pass, double ms) {
  const Node& node = graph.nodes()[static_cast<size_t>(index)];
  const int runner = pass == Pass::kForward ? node.fused_into : node.backward_fused_into;
  if (runner >= 0) return PassCost{pass, ms, 0, 0};
  return PassCost{pass, ms, node.layer->flops(pass), node.layer->bytes_moved(pass)};
}

std::vector<PassCost> layer_passes(const Graph& graph, const LayerTime& time) {
  const Node& node = graph.nodes()[static_cast<size_t>(time.node)];
  std::vector<PassCost> passes = {pass_cost(graph, time.node, Pass::kForward, time.forward_ms)};
  if (!node.runs_backward) return passes;  // an inference plan, or nothing before it trains
  if (node.layer->splits_backward()) {
    const bool wants_input_grad =
        std::any_of(node.input_grads.begin(), node.input_grads.end(), [](const Tensor& g) { return g.defined(); });
    if (wants_input_grad) passes.push_back(pass_cost(graph, time.node, Pass::kBackwardData, time.backward_data_ms()));
    passes.push_back(pass_cost(graph, time.node, Pass::kBackwardWeights, time.backward_weights_ms));
  } else {
    passes.push_back(pass_cost(graph, time.node, Pass::kBackward, time.backward_ms));
  }
  return passes;
}

}  // namespace glassbox::cli
