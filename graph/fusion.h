// graph/fusion.h: which ReLUs a compiled graph fuses into their producers.
//
// Note [A ReLU fused into its producer]: a ReLU after a convolution (AlexNet,
// VGG, Overfeat: no batch norm between them), after a batch norm (every
// ResNet, Inception and Xception block) or after a residual add is one more
// pass over its producer's output, reading and writing it. The producer can
// apply max(0, .) as it writes its output, for no extra pass: a convolution
// with cudnnConvolutionBiasActivationForward on cuDNN or a pass over each
// slice of y while it is in cache on the CPU; a batch norm as it normalises;
// an add as it sums (layers/relu.cu on CUDA). So where
// a ReLU writes its output over its producer's (the memory plan runs it in
// place: the ReLU is that value's only reader, graph/memory_plan.h) and the
// producer can (Layer::can_fuse_relu), the graph has the producer apply the
// ReLU and skips the ReLU's forward. Both values are then one block holding
// max(0, .): the producer's value reads as the ReLU's.
//
// Note [A ReLU's backward fused into its producer]: a producer that
// fuses_relu_backward (batch norm) takes the ReLU's backward too, in a
// training plan: it reads the ReLU's gradient dy and its own output y =
// max(0, .), and uses dy where y > 0 and 0 elsewhere, which is what the ReLU
// would have handed it (its gradient). The ReLU's backward does not run, and
// the producer's output gradient is no block of its own: it is the ReLU's
// (MemoryPlan::fused_relu_grads), alive until the producer's backward, as
// the shared value y is. A batch norm reads its output gradient twice (sums,
// then dx), so the saving is the ReLU's whole pass (read y and dy, write dx)
// and a block of gradient memory. Such a producer fuses the ReLU only where
// it can fuse both (every input gets a gradient: Note [BatchNorm2d scratch
// dx] would otherwise write dx over y), since cuDNN's fused forward leaves
// its backward a reserve of its own.
//
// Note [Fusion does not follow the input gradients asked for]: "gets a
// gradient" here means that a layer that trains lies upstream (Note [Only
// what trains gets a gradient], graph/memory_plan.h), whatever
// CompileOptions::input_gradients asks for. Asking for the images' gradient
// then changes no fusion, and so no rounding: in a 16-bit graph a fused
// bn + z rounds once where the add apart rounds twice, and the parameter
// gradients would differ with the question asked (docs/library.md promises
// the same bits).
//
// Other ReLUs' backward is unchanged: it reads its output, as it does
// unfused. CompileOptions::fusion (`--no-fusion`) turns fusion off, to compare.
//
// Note [A residual add fused into its batch norm]: a residual block ends
// y = relu(add(bn(x), z)), z the block's input or its projection. Where the
// add takes the ReLU (above), the batch norm that feeds it can take both
// (Layer::can_fuse_residual_relu): it writes y = max(0, bn(x) + z) as it
// normalises, and in a training plan its backward masks the ReLU's dy by
// y > 0, writes that into z's gradient, as the add would have, and uses it
// as its own dy. The add and the ReLU then run neither pass: their values
// are the batch norm's block (MemoryPlan::value_block), and the batch norm's
// output gradient is the ReLU's. That saves the add's pass (read two
// values, write one) and, in training, the ReLU's backward. It applies where
//   - the add has two inputs, and the batch norm is one whose only reader is
//     the add (and, in training, whose input and z get a gradient: both or
//     neither, as above, and z's for the batch norm to write);
//   - z, the other, is another layer's output, computed before the batch
//     norm (z must exist when it runs), stored in the same type and layout;
//   - no reader of z but the add is the batch norm itself (z its input x,
//     whose dx would be z's gradient too) or runs its forward after it, so
//     that the batch norm's backward is the first to write z's gradient
//     (cuDNN's backward takes dz as an output, with no blend documented).
// Where both inputs are batch norms (a projection block: bn3 and the
// shortcut's), the later one takes the add. The add's gradient sharing (Note
// [Gradients shared through an add], graph/memory_plan.h) does not apply to
// such an add: it writes no gradient.
#pragma once

#include <vector>

#include "graph/graph.h"
#include "graph/memory_plan.h"

namespace glassbox {

struct ReluFusion {
  // Per node: for a ReLU whose forward its producer does, that producer's
  // node index; for a ReLU and the residual add before it whose forwards a
  // batch norm does (Note [A residual add fused into its batch norm]), that
  // batch norm; -1 otherwise.
  std::vector<int> fused_into;
  // Per node: for a ReLU (or a residual add) whose backward that layer does
  // as well (Note [A ReLU's backward fused into its producer]); -1 otherwise.
  std::vector<int> backward_fused_into;
  // Per node: for a residual add a batch norm does, that batch norm; -1 otherwise.
  std::vector<int> add_fused_into;
  // Per node: for a batch norm that does a residual add, the add's other input z; -1 otherwise.
  std::vector<int> residual;
  bool operator==(const ReluFusion&) const = default;
};

// `layers` in topological order, bound, with the layouts and value types they
// will be prepared with; `plan` planned without fusion (which ReLUs run in place).
ReluFusion plan_relu_fusion(const Context& ctx, Phase phase, const std::vector<Node>& nodes,
                            const std::vector<int>& layers, const MemoryPlan& plan);

// No fusion: every ReLU runs itself.
ReluFusion no_relu_fusion(size_t nodes);

}  // namespace glassbox
