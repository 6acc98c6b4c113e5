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
  std::vector<int> grad_block;   // -1 where no gradient is kept (inputs not asked for, the loss, inference plans)
  std::vector<Block> value_blocks;
  std::vector<Block> grad_blocks;
  ArenaLayout values;
  ArenaLayout grads;
  size_t values_without_reuse = 0;  // what the arenas would take with one block per tensor
  size_t grads_without_reuse = 0;
  int in_place = 0;                 // layers that write their output over their input
};

// Every planned tensor starts on a 256-byte boundary: what cuDNN and cuBLAS
// kernels assume for their widest vector loads.
inline constexpr size_t kPlanAlignment = 256;
inline size_t plan_aligned(size_t bytes) { return (bytes + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment; }

// Plans activations and activation gradients for a graph's nodes (in
// topological order; `layers` are the indices of layer nodes). `phase`
// kInference plans a forward-only graph: no gradients, nothing kept for a
// backward. `input_gradients`: the graph inputs (node indices) that get a
// gradient, as input_gradient_nodes() returns them.
MemoryPlan plan_activations(const std::vector<Node>& nodes, const std::vector<int>& layers, int loss, Phase phase,
                            MemoryReuse reuse, std::span<const int> input_gradients = {});
// The same for a built graph (compiled or not): what compile() would plan.
MemoryPlan plan_activations(const Graph& graph, Phase phase, MemoryReuse reuse = MemoryReuse::kOn,
                            std::span<const std::string> input_gradients = {});

// The node indices of the inputs named in CompileOptions::input_gradients.
// Throws ConfigError, naming the float inputs, for a name that is no input or
// an integer input (labels), and for any name in an inference plan.
std::vector<int> input_gradient_nodes(const std::vector<Node>& nodes, std::span<const std::string> names,
                                      Phase phase);

}  // namespace glassbox
