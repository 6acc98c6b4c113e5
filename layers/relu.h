// layers/relu.h: rectified linear unit, elementwise, any shape.
//   y = max(x, 0)
//   backward: dx (= or +=) dy * [y > 0]
// The mask is read from y, so forward's output is all backward needs.
// CUDA: cuDNN's activation forward and a kernel of its own for backward
// (relu.cu), in bf16 or fp16 where the graph computes so (computes_16_bit;
// relu_cuda.cpp).
#pragma once

#include "layers/layer.h"

namespace glassbox {

// Note [A ReLU keeps a NaN]: max(x, 0) of a NaN is NaN on every path, the
// ReLU layer's and each producer's that applies the ReLU itself, on either
// device, so that a NaN image or a NaN batch statistic reaches the loss,
// which the finite check refuses naming where it began (graph/finite_check.h).
// A ReLU that made it 0 would let training go on with NaN gradients unseen.
// Hence no oneDNN post-op (Note [No ReLU post-op]) and CUDNN_PROPAGATE_NAN
// (make_relu_descriptor, layers/layer_cuda.h); test_finite_check.cpp sends a
// NaN through each path.

// Note [Masks without branches]: dy where y > 0, else 0, one value: ReLU's
// gradient, for a producer that runs a fused ReLU's backward (graph/fusion.h).
// Both values are read before the choice, so that GCC makes a loop of it
// compares and blends: a conditional read keeps a branch per value, which
// mispredicts on ReLU's outputs, about half of them 0. Evidence: ResNet-50's
// layer1.0.bn1 fused backward took 4.0 ms with the branch, 1.1 ms without.
inline float relu_gradient(float y, float dy) { return y > 0.0f ? dy : 0.0f; }

// y = max(y, 0) over n floats, on the context's OpenMP threads: ReLU's
// forward in place, and a producer's where it applies the ReLU after it (Note
// [A ReLU fused into its producer], graph/fusion.h).
void relu_in_place_cpu(float* y, int64_t n);

class ReLU final : public Layer {
 public:
  explicit ReLU(std::string name) : Layer(std::move(name)) {}

  std::string_view type() const override { return "ReLU"; }
  // Backward needs only y (dx = dy where y > 0), so y may overwrite x.
  bool backward_reads_input(int) const override { return false; }
  bool can_run_in_place() const override { return true; }
  bool keeps_layout() const override { return true; }  // elementwise: any order of the elements
  std::string describe() const override { return ""; }
  Shape infer(std::span<const Shape> inputs) const override { return inputs[0]; }
  bool computes_16_bit(const Context& ctx) const override { return ctx.is_cuda(); }

 private:
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;
};

}  // namespace glassbox
