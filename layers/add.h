// layers/add.h: elementwise sum of two or more inputs of one shape (residual connections).
//   y = x0 + x1 + ...
//   backward: dx_i (= or +=) dy for every i
// CUDA: cuDNN's tensor ops and device copies, in bf16 or fp16 where the graph
// computes so (computes_16_bit; add_cuda.cpp); with a fused ReLU, a kernel of
// its own (layers/relu.cu).
#pragma once

#include <string>

#include "layers/layer.h"

namespace glassbox {

class Add final : public Layer {
 public:
  explicit Add(std::string name) : Layer(std::move(name)) {}

  std::string_view type() const override { return "Add"; }
  bool backward_reads_input(int) const override { return false; }
  bool backward_reads_output() const override { return false; }
  bool input_grad_is_output_grad(int) const override { return true; }  // dx_i = dy
  // Elementwise: the inputs and y share one layout, whichever it is (Note
  // [Channels-last values], graph/layouts.h).
  bool keeps_layout() const override { return true; }
  std::string describe() const override;  // "2 inputs"
  int min_inputs() const override { return 2; }
  int max_inputs() const override { return 64; }
  Shape infer(std::span<const Shape> inputs) const override;
  bool computes_16_bit(const Context& ctx) const override { return ctx.is_cuda(); }
  // Note [A ReLU fused into its producer] (graph/fusion.h): the ReLU after a
  // residual add. On the CPU max(0, .) as each chunk of y is written; on CUDA
  // a kernel of two inputs, y = max(0, x0 + x1) (layers/relu.cu).
  bool can_fuse_relu(const Context& ctx, Phase) const override {
    return !ctx.is_cuda() || input_shapes().size() == 2;
  }

 private:
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;
};

}  // namespace glassbox
