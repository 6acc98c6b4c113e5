// graph/fusion.cpp: Note [A ReLU fused into its producer] (graph/fusion.h).
#include "graph/fusion.h"

#include "layers/relu.h"

namespace glassbox {

std::vector<int> plan_relu_fusion(const Context& ctx, const std::vector<Node>& nodes, const std::vector<int>& layers,
                                  const MemoryPlan& plan) {
  std::vector<int> fused_into(nodes.size(), -1);
  for (int i : layers) {
    const Node& relu = nodes[static_cast<size_t>(i)];
    if (dynamic_cast<const ReLU*>(relu.layer.get()) == nullptr || relu.inputs.size() != 1) continue;
    const int p = relu.inputs[0];
    const Node& producer = nodes[static_cast<size_t>(p)];
    if (producer.is_input() || !producer.layer->can_fuse_relu(ctx)) continue;
    const int block = plan.value_block[static_cast<size_t>(i)];
    if (block < 0 || block != plan.value_block[static_cast<size_t>(p)]) continue;  // not in place
    fused_into[static_cast<size_t>(i)] = p;
  }
  return fused_into;
}

}  // namespace glassbox
