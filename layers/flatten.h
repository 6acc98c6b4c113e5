// layers/flatten.h: (N, d1, d2, ...) -> (N, d1*d2*...), the bridge from
// convolutions to linear layers. The elements do not move (NCHW is already
// sample-major); forward copies them into the output, backward copies (or adds)
// the gradient back. On CUDA it moves bf16 or fp16 values as they are where the
// graph computes so (computes_16_bit): the copies are of bytes, the add cuDNN's.
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

 private:
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;
};

}  // namespace glassbox
