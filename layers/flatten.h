// layers/flatten.h: (N, d1, d2, ...) -> (N, d1*d2*...), the bridge from
// convolutions to linear layers. y[n, (c*H + h)*W + w] = x[n, c, h, w]: the
// output is in NCHW order, which a Linear reads as PyTorch's does. From an
// NCHW input the elements do not move (NCHW is already sample-major); forward
// copies them into the output, backward copies (or adds) the gradient back. On
// CUDA it moves bf16 or fp16 values as they are where the graph computes so
// (computes_16_bit): the copies are of bytes, the add cuDNN's.
//
// Note [Flatten of channels-last values]: on CUDA a rank-4 input may be stored
// NHWC; forward then reorders it into y's NCHW order with one cuDNN
// transform, and backward reorders dy into dx's NHWC order (written or added).
// Where C = 1 or H*W = 1 the two orders are the same bytes, and it copies.
// PyTorch's flatten of a channels_last tensor copies too: the reshape of a view
// whose strides are not NCHW's cannot be a view, so it copies into NCHW order.
#pragma once

#include <string>

#include "layers/layer.h"

namespace glassbox {

class Flatten final : public Layer {
 public:
  explicit Flatten(std::string name) : Layer(std::move(name)) {}

  std::string_view type() const override { return "Flatten"; }
  bool backward_reads_input(int) const override { return false; }
  bool backward_reads_output() const override { return false; }
  std::string describe() const override { return ""; }
  Shape infer(std::span<const Shape> inputs) const override;
  bool computes_16_bit(const Context& ctx) const override { return ctx.is_cuda(); }
  // Prepared for CUDA, a rank-4 input may be NHWC (Note [Flatten of
  // channels-last values]); the output, rank 2, is never. The CPU: NCHW only.
  bool can_read_channels_last(int index) const override {
    return index == 0 && prepared_for_cuda() && input_shapes()[0].rank() == 4;
  }

 private:
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;
};

}  // namespace glassbox
