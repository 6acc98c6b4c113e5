// graph/fusion.cpp: Note [A ReLU fused into its producer] (graph/fusion.h).
#include "graph/fusion.h"

#include <algorithm>

#include "layers/add.h"
#include "layers/relu.h"

namespace glassbox {

ReluFusion no_relu_fusion(size_t nodes) {
  const std::vector<int> none(nodes, -1);
  return {none, none, none, none};
}

namespace {

// Note [A residual add fused into its batch norm]: for the add `a`, whose
// ReLU it applies, the input that can take both, or -1.
int residual_taker(const Context& ctx, Phase phase, const std::vector<Node>& nodes, int a,
                   const std::vector<int>& position, const std::vector<std::vector<int>>& readers,
                   const std::vector<bool>& trained) {
  const Node& add = nodes[static_cast<size_t>(a)];
  if (add.inputs.size() != 2 || add.inputs[0] == add.inputs[1]) return -1;
  auto at = [&](int node) { return position[static_cast<size_t>(node)]; };
  int chosen = -1;
  for (size_t j = 0; j < 2; ++j) {
    const int b = add.inputs[j], z = add.inputs[1 - j];
    const Node& bn = nodes[static_cast<size_t>(b)];
    const Node& other = nodes[static_cast<size_t>(z)];
    if (bn.is_input() || other.is_input() || !bn.layer->can_fuse_residual_relu(ctx, phase)) continue;
    if (readers[static_cast<size_t>(b)].size() != 1) continue;  // the add only
    if (phase == Phase::kTraining &&
        (!trained[static_cast<size_t>(z)] ||
         std::any_of(bn.inputs.begin(), bn.inputs.end(), [&](int q) { return !trained[static_cast<size_t>(q)]; }))) {
      continue;  // both or neither, and z's gradient to write: Note [A ReLU's backward fused into its producer]
    }
    if (other.stored != bn.stored || other.channels_last != bn.channels_last || at(z) > at(b)) continue;
    // No reader of z but the add is the batch norm itself (z its input: its
    // dx and dz would be one gradient) or runs after it.
    const std::vector<int>& r = readers[static_cast<size_t>(z)];
    if (std::any_of(r.begin(), r.end(), [&](int c) { return c != a && at(c) >= at(b); })) continue;
    if (chosen < 0 || at(b) > at(chosen)) chosen = b;
  }
  return chosen;
}

}  // namespace

ReluFusion plan_relu_fusion(const Context& ctx, Phase phase, const std::vector<Node>& nodes,
                            const std::vector<int>& layers, const MemoryPlan& plan) {
  ReluFusion fusion = no_relu_fusion(nodes.size());
  // Note [Fusion does not follow the input gradients asked for]
  const std::vector<bool> trained =
      nodes_wanting_gradients(nodes, layers, -1, std::vector<bool>(nodes.size(), false));
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
                                [&](int q) { return !trained[static_cast<size_t>(q)]; })) {
      continue;  // both or neither: Note [A ReLU's backward fused into its producer]
    }
    fusion.fused_into[static_cast<size_t>(i)] = p;
    if (backward) fusion.backward_fused_into[static_cast<size_t>(i)] = p;
  }
  // Note [A residual add fused into its batch norm]
  std::vector<int> position(nodes.size(), -1);
  std::vector<std::vector<int>> readers(nodes.size());
  for (size_t k = 0; k < layers.size(); ++k) {
    const int i = layers[k];
    position[static_cast<size_t>(i)] = static_cast<int>(k);
    for (int p : nodes[static_cast<size_t>(i)].inputs) readers[static_cast<size_t>(p)].push_back(i);
  }
  for (int i : layers) {
    const int a = fusion.fused_into[static_cast<size_t>(i)];
    if (a < 0 || dynamic_cast<const Add*>(nodes[static_cast<size_t>(a)].layer.get()) == nullptr) continue;
    const int b = residual_taker(ctx, phase, nodes, a, position, readers, trained);
    if (b < 0) continue;
    const Node& add = nodes[static_cast<size_t>(a)];
    const int z = add.inputs[0] == b ? add.inputs[1] : add.inputs[0];
    fusion.fused_into[static_cast<size_t>(i)] = fusion.fused_into[static_cast<size_t>(a)] = b;
    fusion.add_fused_into[static_cast<size_t>(a)] = b;
    fusion.residual[static_cast<size_t>(b)] = z;
    if (phase == Phase::kTraining) {
      fusion.backward_fused_into[static_cast<size_t>(i)] = fusion.backward_fused_into[static_cast<size_t>(a)] = b;
    }
  }
  return fusion;
}

}  // namespace glassbox
