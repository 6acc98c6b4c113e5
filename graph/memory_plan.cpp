// graph/memory_plan.cpp
#include "graph/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace glassbox {
namespace {

size_t bytes_of(const Node& node) {
  return plan_aligned(static_cast<size_t>(node.shape.numel()) * size_of(node.stored));
}

// Whether `layer_node` may write its output over its only input: the layer
// allows it, the input is another layer's output of the same size, nothing
// else reads that input, and its producer does not need it in backward.
bool runs_in_place(const std::vector<Node>& nodes, const std::vector<int>& readers, const Node& layer_node,
                   Phase phase) {
  if (!layer_node.layer->can_run_in_place() || layer_node.inputs.size() != 1) return false;
  const Node& input = nodes[static_cast<size_t>(layer_node.inputs[0])];
  if (input.is_input() || readers[static_cast<size_t>(layer_node.inputs[0])] != 1) return false;
  if (bytes_of(input) != bytes_of(layer_node) || input.stored != layer_node.stored) return false;
  return phase == Phase::kInference || !input.layer->backward_reads_output();
}

// Note [Gradients shared through an add]: per node, the add whose gradient it
// shares, or -1. `position`: each layer node's forward time.
// Adds a batch norm does share nothing (`fused_add`).
std::vector<int> share_add_gradients(const std::vector<Node>& nodes, const std::vector<int>& layers, int loss,
                                     const std::vector<int>& position, const std::vector<int>& fused_add,
                                     std::span<const int> relu_backward_fused_into,
                                     const std::vector<bool>& wants_grad) {
  std::vector<std::vector<int>> readers(nodes.size());
  for (int i : layers) {
    for (int p : nodes[static_cast<size_t>(i)].inputs) readers[static_cast<size_t>(p)].push_back(i);
  }
  auto at = [&](int node) { return position[static_cast<size_t>(node)]; };
  // When an input of the add reads the shared block as its dy: in its own
  // backward, or, for a ReLU whose producer runs its backward (Note [A ReLU's
  // backward fused into its producer]), in the producer's, which comes later:
  // the forward time that stands for it is the producer's.
  auto reads_dy_at = [&](int q) {
    const auto k = static_cast<size_t>(q);
    const int producer = k < relu_backward_fused_into.size() ? relu_backward_fused_into[k] : -1;
    return producer >= 0 ? at(producer) : at(q);
  };
  std::vector<int> shared(nodes.size(), -1);
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
    const int a = *it;
    const Node& add = nodes[static_cast<size_t>(a)];
    if (a == loss || shared[static_cast<size_t>(a)] >= 0 || fused_add[static_cast<size_t>(a)] >= 0) continue;
    std::vector<int> chosen;
    for (size_t j = 0; j < add.inputs.size(); ++j) {
      const int p = add.inputs[j];
      const Node& producer = nodes[static_cast<size_t>(p)];
      if (producer.is_input() || !wants_grad[static_cast<size_t>(p)] ||
          !add.layer->input_grad_is_output_grad(static_cast<int>(j))) {
        continue;
      }
      if (std::count(add.inputs.begin(), add.inputs.end(), p) != 1) continue;
      if (bytes_of(producer) != bytes_of(add) || producer.stored != add.stored) continue;
      const std::vector<int>& r = readers[static_cast<size_t>(p)];
      if (std::any_of(r.begin(), r.end(), [&](int c) { return at(c) > at(a); })) continue;
      chosen.push_back(p);
    }
    // Drops an input while another reader of it would add into the block
    // before some other chosen input has read it.
    for (size_t k = 0; k < chosen.size();) {
      const int p = chosen[k];
      const std::vector<int>& r = readers[static_cast<size_t>(p)];
      const bool early = std::any_of(r.begin(), r.end(), [&](int c) {
        return c != a &&
               std::any_of(chosen.begin(), chosen.end(), [&](int q) { return q != p && at(c) >= reads_dy_at(q); });
      });
      if (early) {
        chosen.erase(chosen.begin() + static_cast<std::ptrdiff_t>(k));
        k = 0;  // the others are checked again against what is left
      } else {
        ++k;
      }
    }
    for (int p : chosen) shared[static_cast<size_t>(p)] = a;
  }
  return shared;
}

}  // namespace

std::vector<bool> nodes_wanting_gradients(const std::vector<Node>& nodes, const std::vector<int>& layers, int loss,
                                          const std::vector<bool>& input_gets_grad) {
  std::vector<bool> wants(nodes.size(), false);
  for (size_t n = 0; n < nodes.size() && n < input_gets_grad.size(); ++n) {
    wants[n] = nodes[n].is_input() && input_gets_grad[n];
  }
  for (int i : layers) {  // topological: every producer is settled first
    if (i == loss) continue;
    const Node& node = nodes[static_cast<size_t>(i)];
    wants[static_cast<size_t>(i)] =
        !node.layer->param_specs().empty() ||
        std::any_of(node.inputs.begin(), node.inputs.end(), [&](int p) { return wants[static_cast<size_t>(p)]; });
  }
  return wants;
}

ArenaLayout place_blocks(std::span<const Block> blocks, MemoryReuse reuse) {
  ArenaLayout layout;
  layout.offsets.assign(blocks.size(), 0);
  if (reuse == MemoryReuse::kOff) {
    for (size_t i = 0; i < blocks.size(); ++i) {
      layout.offsets[i] = layout.total;
      layout.total += blocks[i].bytes;
    }
    return layout;
  }
  // Largest first (earlier first among equals, so the plan is deterministic).
  std::vector<size_t> order(blocks.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return blocks[a].bytes > blocks[b].bytes; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    // The placed blocks alive at the same time as this one, by offset: take
    // the lowest gap between them that is large enough.
    std::vector<size_t> conflicts;
    for (size_t j : placed) {
      if (blocks[j].live.overlaps(blocks[i].live)) conflicts.push_back(j);
    }
    std::sort(conflicts.begin(), conflicts.end(),
              [&](size_t a, size_t b) { return layout.offsets[a] < layout.offsets[b]; });
    size_t offset = 0;
    for (size_t j : conflicts) {
      if (layout.offsets[j] >= offset + blocks[i].bytes) break;  // fits in the gap before block j
      offset = std::max(offset, layout.offsets[j] + blocks[j].bytes);
    }
    layout.offsets[i] = offset;
    layout.total = std::max(layout.total, offset + blocks[i].bytes);
    placed.push_back(i);
  }
  return layout;
}

std::string find_overlap(std::span<const Block> blocks, const ArenaLayout& layout) {
  for (size_t i = 0; i < blocks.size(); ++i) {
    for (size_t j = i + 1; j < blocks.size(); ++j) {
      if (!blocks[i].live.overlaps(blocks[j].live)) continue;
      const size_t a = layout.offsets[i], b = layout.offsets[j];
      if (a < b + blocks[j].bytes && b < a + blocks[i].bytes) {
        return cat("blocks ", i, " [", a, ", ", a + blocks[i].bytes, ") alive ", blocks[i].live.first, "..",
                   blocks[i].live.last, " and ", j, " [", b, ", ", b + blocks[j].bytes, ") alive ",
                   blocks[j].live.first, "..", blocks[j].live.last, " share memory");
      }
    }
  }
  return "";
}

MemoryPlan plan_activations(const std::vector<Node>& nodes, const std::vector<int>& layers, int loss, Phase phase,
                            MemoryReuse reuse, std::span<const int> input_gradients,
                            std::span<const int> relu_backward_fused_into, std::span<const int> add_fused_into) {
  const bool training = phase == Phase::kTraining;
  // Note [A residual add fused into its batch norm]: per node, the batch norm doing this add.
  std::vector<int> fused_add(nodes.size(), -1);
  std::copy(add_fused_into.begin(), add_fused_into.end(), fused_add.begin());
  const int count = static_cast<int>(layers.size());
  std::vector<int> position(nodes.size(), -1);  // a layer node's forward time
  for (int k = 0; k < count; ++k) position[static_cast<size_t>(layers[static_cast<size_t>(k)])] = k;
  auto forward_time = [&](int node) { return position[static_cast<size_t>(node)]; };
  auto backward_time = [&](int node) { return 2 * count - 1 - position[static_cast<size_t>(node)]; };

  std::vector<bool> input_gets_grad(nodes.size(), false);
  for (int i : input_gradients) input_gets_grad[static_cast<size_t>(i)] = training;
  // Note [Only what trains gets a gradient]
  const std::vector<bool> wants_grad = training ? nodes_wanting_gradients(nodes, layers, loss, input_gets_grad)
                                                : std::vector<bool>(nodes.size(), false);
  std::vector<int> readers(nodes.size(), 0);
  for (const Node& node : nodes) {
    for (int producer : node.inputs) ++readers[static_cast<size_t>(producer)];
  }

  MemoryPlan plan;
  plan.value_block.assign(nodes.size(), -1);
  plan.grad_block.assign(nodes.size(), -1);
  plan.grad_shared_with.assign(nodes.size(), -1);
  plan.wants_grad = wants_grad;
  for (int i : layers) {
    const Node& node = nodes[static_cast<size_t>(i)];
    const size_t bytes = bytes_of(node);
    plan.values_without_reuse += bytes;
    const Lifetime born{forward_time(i), forward_time(i)};
    if (const int b = fused_add[static_cast<size_t>(i)]; b >= 0) {
      plan.value_block[static_cast<size_t>(i)] = plan.value_block[static_cast<size_t>(b)];
      ++plan.fused_adds;
    } else if (reuse == MemoryReuse::kOn && runs_in_place(nodes, readers, node, phase)) {
      plan.value_block[static_cast<size_t>(i)] = plan.value_block[static_cast<size_t>(node.inputs[0])];
      ++plan.in_place;
    } else {
      plan.value_block[static_cast<size_t>(i)] = static_cast<int>(plan.value_blocks.size());
      plan.value_blocks.push_back({bytes, born});
    }
  }

  // Extends a value's block to every time the value is read.
  auto read_at = [&](int node, int time) {
    Lifetime& live = plan.value_blocks[static_cast<size_t>(plan.value_block[static_cast<size_t>(node)])].live;
    live.last = std::max(live.last, time);
  };
  for (int i : layers) {
    const Node& node = nodes[static_cast<size_t>(i)];
    bool gets_every_input_grad = true;
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      const int producer = node.inputs[j];
      if (!wants_grad[static_cast<size_t>(producer)]) gets_every_input_grad = false;
      if (nodes[static_cast<size_t>(producer)].is_input()) continue;
      read_at(producer, forward_time(i));
      if (training && node.layer->backward_reads_input(static_cast<int>(j))) read_at(producer, backward_time(i));
    }
    if (training && (node.layer->backward_reads_output() || !gets_every_input_grad)) read_at(i, backward_time(i));
  }
  // Note [A ReLU's backward fused into its producer]: per producer, its ReLU.
  std::vector<int> fused_relu_of(nodes.size(), -1);
  for (size_t r = 0; r < relu_backward_fused_into.size(); ++r) {
    const int producer = relu_backward_fused_into[r];
    if (!training || producer < 0 || fused_add[r] >= 0 || !wants_grad[r]) continue;
    fused_relu_of[static_cast<size_t>(producer)] = static_cast<int>(r);
    read_at(static_cast<int>(r), backward_time(producer));  // y, for the mask
  }
  // A batch norm doing an add reads z in its forward, before the add would:
  // z is alive then already, as it is made earlier and read by the add later.
  read_at(loss, Lifetime::kAfterStep);
  plan.values = place_blocks(plan.value_blocks, reuse);
  if (!training) return plan;

  // Graph inputs asked for and layers but the loss, in node order.
  if (reuse == MemoryReuse::kOn) {
    plan.grad_shared_with =
        share_add_gradients(nodes, layers, loss, position, fused_add, relu_backward_fused_into, wants_grad);
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    const int i = static_cast<int>(n);
    const Node& node = nodes[n];
    if (!wants_grad[n]) continue;  // the loss starts backward with 1
    if (plan.grad_shared_with[n] >= 0 || fused_relu_of[n] >= 0 || fused_add[n] >= 0) continue;  // another's, below
    int first = node.is_input() ? Lifetime::kAfterStep : backward_time(i);
    for (int j : layers) {
      const std::vector<int>& in = nodes[static_cast<size_t>(j)].inputs;
      if (std::find(in.begin(), in.end(), i) != in.end()) first = std::min(first, backward_time(j));
    }
    const int last = node.is_input() ? Lifetime::kAfterStep : backward_time(i);  // read after the step
    plan.grad_block[n] = static_cast<int>(plan.grad_blocks.size());
    plan.grad_blocks.push_back({bytes_of(node), {first, last}});
    plan.grads_without_reuse += bytes_of(node);
  }
  // A shared gradient is read (and added to) until its own layer's backward.
  for (size_t n = 0; n < nodes.size(); ++n) {
    const int add = plan.grad_shared_with[n];
    if (add < 0) continue;
    plan.grad_block[n] = plan.grad_block[static_cast<size_t>(add)];
    Lifetime& live = plan.grad_blocks[static_cast<size_t>(plan.grad_block[n])].live;
    live.last = std::max(live.last, backward_time(static_cast<int>(n)));
    plan.grads_without_reuse += bytes_of(nodes[n]);
    ++plan.shared_grads;
  }
  // A fused ReLU's gradient is its producer's until the producer's backward
  // (after any add's sharing above has settled the ReLU's block).
  for (size_t n = 0; n < nodes.size(); ++n) {
    const int relu = fused_relu_of[n];
    if (relu < 0) continue;
    plan.grad_block[n] = plan.grad_block[static_cast<size_t>(relu)];
    Lifetime& live = plan.grad_blocks[static_cast<size_t>(plan.grad_block[n])].live;
    live.last = std::max(live.last, backward_time(static_cast<int>(n)));
    plan.grads_without_reuse += bytes_of(nodes[n]);
    ++plan.fused_relu_grads;
  }
  // A fused add's gradient is never written or read: its batch norm's block
  // (the ReLU's) stands for it.
  for (size_t n = 0; n < nodes.size(); ++n) {
    const int b = fused_add[n];
    if (b < 0) continue;
    plan.grad_block[n] = plan.grad_block[static_cast<size_t>(b)];
    plan.grads_without_reuse += bytes_of(nodes[n]);
  }
  plan.grads = place_blocks(plan.grad_blocks, reuse);
  return plan;
}

MemoryPlan plan_activations(const Graph& graph, Phase phase, MemoryReuse reuse,
                            std::span<const std::string> input_gradients) {
  std::vector<int> layers;
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    if (!graph.nodes()[i].is_input()) layers.push_back(static_cast<int>(i));
  }
  const std::vector<int> inputs = input_gradient_nodes(graph.nodes(), input_gradients, phase);
  return plan_activations(graph.nodes(), layers, graph.loss_node(), phase, reuse, inputs);
}

}  // namespace glassbox
