// graph/memory_plan.h: which activations and activation gradients may share
// memory, decided once at compile time from when each is alive.
//
// A step is a timeline: the forward of the k-th layer (in topological order)
// runs at time k, and in a training plan the backward of the same layer at
// time 2L-1-k (L layers). A value is alive from the forward that writes it to
// the last time anything reads it:
//   - the forward of every layer that takes it as an input;
//   - in training, the backward of every such layer that reads that input
//     (Layer::backward_reads_input: a convolution needs x for dW, an add
//     needs neither of its inputs);
//   - in training, its own layer's backward if that reads its output (ReLU)
//     or may use it as scratch (a layer none of whose inputs wants a gradient:
//     Note [BatchNorm2d scratch dx]);
//   - the loss: until after the step, when it is read.
// A value's gradient is alive from the backward of its last reader in forward
// order (the first to write the gradient) to its own layer's backward. A graph
// input's gradient, where asked for (CompileOptions::input_gradients), has no
// layer of its own: it is alive from its first write until after the step,
// since the caller reads it after backward.
//
// Note [Gradients shared through an add]: an add's backward writes dy into
// each input's gradient (dx_i = dy: Layer::input_grad_is_output_grad). Where
// that copy is the gradient's first write, the plan gives the input's gradient
// the add's own gradient block instead, and the add skips that input: nothing
// is copied (ResNet-50's adds copy about 5.6 GB a step on the GPU at batch
// 64). It does so for an input p of add A when
//   - p is a layer's output (a graph input's gradient is read after the
//     step), given to A once (add(x, x) doubles dy), of A's size and type;
//   - A is p's last reader in forward order, so its backward writes p's
//     gradient first (any other reader adds to it later);
//   - every other reader of p adds its part only after each other input of A
//     that shares the block has read it: its backward runs later, which is
//     its forward earlier (a reader that is itself such an input would read
//     and add to one block in one call, and is never after itself). A ReLU
//     whose backward its producer runs reads the block in the producer's
//     backward (Note [A ReLU's backward fused into its producer]), so a
//     reader must come before the producer;
//   - A's own gradient is not shared with a later add (one level: the adds
//     are planned from the last).
// A residual block's two inputs both qualify: the branch's last layer, and
// the block's input, whose other reader (the branch's first layer) runs its
// backward after the branch's last. The shared block lives from the first
// write of A's gradient to the last backward that reads or adds to it. Without
// memory reuse nothing is shared, so every gradient stays readable.
//
// Note [Only what trains gets a gradient]: a value gets a gradient only
// where backward needs it: a layer with parameters, anything downstream of
// one, and a graph input asked for (CompileOptions::input_gradients). The
// values computed from the data alone (a Flatten or pooling of the images
// before the first layer that trains) get none, so the first layer that
// trains runs no backward-data, as for a convolution on the images, and the
// layers before it run no backward at all (Node::runs_backward).
//
// Blocks alive at overlapping times never share bytes; blocks whose lifetimes
// are disjoint may. An in-place layer (ReLU) writes its output over its input
// when nothing else will read the input: the two values are one block.
// Placement is greedy by size (largest block first, at the lowest offset free
// for its whole lifetime), the usual heuristic for this offline problem.
#pragma once

#include <climits>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace glassbox {

// [first, last]: the times a block is alive, both ends included.
struct Lifetime {
  int first = 0;
  int last = 0;
  static constexpr int kAfterStep = INT_MAX;  // read after the step ends (the loss)
  bool overlaps(const Lifetime& other) const { return first <= other.last && other.first <= last; }
};

struct Block {
  size_t bytes = 0;  // aligned
  Lifetime live;
};

// Where each block sits in its arena, and the arena's size.
struct ArenaLayout {
  std::vector<size_t> offsets;  // per block
  size_t total = 0;
};

// Places blocks: with reuse, greedy by size; without, back to back.
ArenaLayout place_blocks(std::span<const Block> blocks, MemoryReuse reuse);

// "" when no two blocks alive at the same time share a byte; otherwise the
// first such pair, described. Checks the plan itself, not its outcome.
std::string find_overlap(std::span<const Block> blocks, const ArenaLayout& layout);

// The plan of one graph: per node, its value's and its gradient's block.
struct MemoryPlan {
  std::vector<int> value_block;  // -1 for graph inputs (they live in the data arena)
  std::vector<int> grad_block;   // -1 where no gradient is kept (!wants_grad, inference plans)
  // Per node: whether backward computes its gradient (Note [Only what trains
  // gets a gradient]); false for the loss, which starts backward with 1, and
  // everywhere in an inference plan.
  std::vector<bool> wants_grad;
  std::vector<Block> value_blocks;
  std::vector<Block> grad_blocks;
  ArenaLayout values;
  ArenaLayout grads;
  size_t values_without_reuse = 0;  // what the arenas would take with one block per tensor
  size_t grads_without_reuse = 0;
  int in_place = 0;                 // layers that write their output over their input
  // Per node: the add whose gradient block this node's gradient is (Note
  // [Gradients shared through an add]); -1 where it has its own, or none.
  std::vector<int> grad_shared_with;
  int shared_grads = 0;             // gradients that are an add's (each counted in grads_without_reuse too)
  // Producers whose output gradient is the gradient of the ReLU after them
  // (Note [A ReLU's backward fused into its producer], graph/fusion.h); each
  // counted in grads_without_reuse too.
  int fused_relu_grads = 0;
  // Residual adds whose value is their batch norm's (Note [A residual add
  // fused into its batch norm], graph/fusion.h).
  int fused_adds = 0;
};

// Every planned tensor starts on a 256-byte boundary: what cuDNN and cuBLAS
// kernels assume for their widest vector loads.
inline constexpr size_t kPlanAlignment = 256;
inline size_t plan_aligned(size_t bytes) { return (bytes + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment; }
// The parameters' arena aligns each parameter at twice that: a bf16 or fp16
// working copy holds each at the same element offset, half the bytes, which
// is then still a multiple of kPlanAlignment, as cuBLASLt's default operand
// alignment and the vector loads of cuDNN's kernels want.
inline constexpr size_t kParameterAlignment = 2 * kPlanAlignment;
inline size_t parameter_aligned(size_t bytes) {
  return (bytes + kParameterAlignment - 1) / kParameterAlignment * kParameterAlignment;
}

// Plans activations and activation gradients for a graph's nodes (in
// topological order; `layers` are the indices of layer nodes). `phase`
// kInference plans a forward-only graph: no gradients, nothing kept for a
// backward. `input_gradients`: the graph inputs (node indices) that get a
// gradient, as input_gradient_nodes() returns them. `relu_backward_fused_into`:
// per node, for a ReLU whose backward its producer runs, that producer, else
// -1 (ReluFusion::backward_fused_into; empty: none). Such a ReLU's value (its
// producer's) lives until the producer's backward, which reads it, and the
// producer's gradient is the ReLU's block. `add_fused_into`: per node, for a
// residual add a batch norm does, that batch norm, else -1
// (ReluFusion::add_fused_into; Note [A residual add fused into its batch
// norm], graph/fusion.h). Such an add's value is the batch norm's block, it
// shares no gradient, and its gradient is the batch norm's (the ReLU's); the
// entries of such adds in relu_backward_fused_into are skipped.
MemoryPlan plan_activations(const std::vector<Node>& nodes, const std::vector<int>& layers, int loss, Phase phase,
                            MemoryReuse reuse, std::span<const int> input_gradients = {},
                            std::span<const int> relu_backward_fused_into = {},
                            std::span<const int> add_fused_into = {});
// The same for a built graph (compiled or not): what compile() would plan.
MemoryPlan plan_activations(const Graph& graph, Phase phase, MemoryReuse reuse = MemoryReuse::kOn,
                            std::span<const std::string> input_gradients = {});

// Note [Only what trains gets a gradient]: per node, whether backward computes
// its gradient. `layers` in topological order; `input_gets_grad` per node (the
// graph inputs asked for).
std::vector<bool> nodes_wanting_gradients(const std::vector<Node>& nodes, const std::vector<int>& layers, int loss,
                                          const std::vector<bool>& input_gets_grad);

// The node indices of the inputs named in CompileOptions::input_gradients.
// Throws ConfigError, naming the float inputs, for a name that is no input or
// an integer input (labels), and for any name in an inference plan.
std::vector<int> input_gradient_nodes(const std::vector<Node>& nodes, std::span<const std::string> names,
                                      Phase phase);

}  // namespace glassbox
