// graph/mixed_precision.h: what a bf16 or fp16 graph stores in 16 bits, and
// how its layers run on the CPU.
//
// Note [Mixed precision]: in a graph compiled for bf16 or fp16
// (CompileOptions::precision):
// - every float value a layer writes, and its gradient, is stored in the
//   16-bit type (Node::stored), except the loss, which is fp32; the graph's
//   inputs keep their type (the images are fp32, as PyTorch's autocast takes them);
// - the weights in use are a 16-bit working copy of the fp32 master
//   parameters (Graph::working_parameters), which the optimizer rewrites in
//   its update pass (optim/sgd.h); batch norm uses its fp32 parameters
//   (Layer::keeps_fp32_parameters);
// - parameter gradients, momentum, batch-norm statistics and the loss are
//   fp32, and so is every sum. The gradients stay fp32 as autocast keeps the
//   .grad of an fp32 parameter, so clipping, the all-reduce, loss scaling and
//   the update read what they read in fp32;
// - fp16 multiplies the loss's gradient by the loss scale before it is
//   rounded to 16 bits (Graph::set_loss_scale; optim/loss_scale.h), so that
//   small gradients survive fp16's range.
// On the CPU, whose kernels are fp32, each layer's 16-bit tensors are widened
// into fp32 staging before its call, and what it writes is rounded back to 16
// bits after it. Every stored value is then rounded as 16-bit storage rounds
// it, and every sum is fp32: the arithmetic of mixed precision, not its speed
// (each layer pays a conversion pass over each of its 16-bit tensors).
#pragma once

#include <cstddef>
#include <vector>

#include "graph/graph.h"

namespace glassbox {

// Runs layers of a 16-bit graph on the CPU through fp32 staging.
class CpuWidening {
 public:
  // The staging one layer needs: every 16-bit tensor its forward (and, in a
  // training plan, its backward) reads or writes, in fp32, each aligned.
  static size_t staging_bytes(const Node& node, Phase phase);

  // `bytes`: the most any layer needs (MemoryCategory::kWorkspace).
  CpuWidening(Context& ctx, size_t bytes);

  void forward(Context& ctx, Node& node, Phase phase);
  // `loss_scale` multiplies the input gradients of a loss layer (1: none).
  void backward(Context& ctx, Node& node, GradMode param_grad_mode, float loss_scale);

  size_t bytes() const { return staging_.defined() ? staging_.bytes() : 0; }

 private:
  Tensor staging_;  // fp32, handed out front to back for each call
};

// Multiplies a float32 tensor on the CPU by `factor`, in place.
void scale_cpu(const Tensor& t, float factor);

}  // namespace glassbox
