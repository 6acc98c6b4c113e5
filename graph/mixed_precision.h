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
// A layer that computes_16_bit on the graph's device (Note [16-bit values in
// a layer], layers/layer.h: cuDNN and cuBLAS on a GPU) gets its 16-bit tensors
// as they are; an fp32 graph input it reads (the images) is cast to 16 bits
// for it first, as autocast casts a convolution's input. Every other layer
// (all of them on the CPU, whose kernels are fp32) gets each of its 16-bit
// tensors widened into fp32 staging before its call, and what it writes is
// rounded back to 16 bits after it. Every stored value is then rounded as
// 16-bit storage rounds it, and every sum is fp32: the arithmetic of mixed
// precision, though not its speed for a staged layer (a conversion pass over
// each of its 16-bit tensors). glassbox time names each layer's way
// (Graph::precision_path).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace glassbox {

// Runs the layers of a 16-bit graph, converting each tensor whose type is
// not the one the layer computes in (Layer::value_storage, weight_storage)
// through staging, on either device.
class PrecisionStaging {
 public:
  // The staging one layer needs: every tensor its forward (and, in a
  // training plan, its backward) reads or writes in another type than the
  // layer's, in the layer's type, each aligned.
  static size_t staging_bytes(const Node& node, Phase phase);

  // `bytes`: the most any layer needs (MemoryCategory::kWorkspace).
  PrecisionStaging(Context& ctx, size_t bytes);

  void forward(Context& ctx, Node& node, Phase phase);
  // `loss_scale`: what multiplies the input gradients of a loss layer (Graph::set_loss_scale).
  void backward(Context& ctx, Node& node, GradMode param_grad_mode, const LossScale& loss_scale);

  size_t bytes() const { return staging_.defined() ? staging_.bytes() : 0; }

 private:
  Tensor staging_;  // raw bytes (float32 elements), handed out front to back for each call
};

// Multiplies a float32 tensor in place by the loss scale: on the CPU by its
// host value, on a CUDA device by the value in device memory where there is
// one (the host never reads it), else by the host value.
void apply_loss_scale(Context& ctx, const Tensor& t, const LossScale& loss_scale);

// "bf16", "fp32 (staged from bf16)" or "fp32": what one layer of a graph computes in and how it
// gets its values (glassbox time's precision column).
std::string precision_path(const Node& node);

}  // namespace glassbox
