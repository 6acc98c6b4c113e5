// graph/fusion.cpp: Note [A ReLU fused into its producer] (graph/fusion.h).
#include "graph/fusion.h"

#include <algorithm>

#include "layers/relu.h"

namespace glassbox {

ReluFusion no_relu_fusion(size_t nodes) {
  return {std::vector<int>(nodes, -1), std::vector<int>(nodes, -1)};
}

ReluFusion plan_relu_fusion(const Context& ctx, Phase phase, const std::vector<Node>& nodes,
                            const std::vector<int>& layers, const MemoryPlan& plan) {
  ReluFusion fusion = no_relu_fusion(nodes.size());
  for (int i : layers) {
    const Node& relu = nodes[static_cast<size_t>(i)];
    if (dynamic_cast<const ReLU*>(relu.layer.get()) == nullptr || relu.inputs.size() != 1) continue;
    const int p = relu.inputs[0];
    const Node& producer = nodes[static_cast<size_t>(p)];
    if (producer.is_input() || !producer.layer->can_fuse_relu(ctx, phase)) continue;
    const int block = plan.value_block[static_cast<size_t>(i)];
    if (block < 0 || block != plan.value_block[static_cast<size_t>(p)]) continue;  // not in place
    const bool backward = phase == Phase::kTraining && producer.layer->fuses_relu_backward();
    if (backward && std::any_of(producer.inputs.begin(), producer.inputs.end(),
                                [&](int q) { return nodes[static_cast<size_t>(q)].is_input(); })) {
      continue;  // both or neither: Note [A ReLU's backward fused into its producer]
    }
    fusion.fused_into[static_cast<size_t>(i)] = p;
    if (backward) fusion.backward_fused_into[static_cast<size_t>(i)] = p;
  }
  return fusion;
}

}  // namespace glassbox
