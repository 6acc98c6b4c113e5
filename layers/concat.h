// layers/concat.h: concatenation along channels (inception blocks).
//   x_i:(N,C_i,H,W) -> y:(N, sum C_i, H, W),  y[:, offset_i : offset_i + C_i] = x_i
//   backward: dx_i (= or +=) dy[:, offset_i : offset_i + C_i]
// Each input is N blocks of C_i*H*W contiguous elements landing C*H*W apart:
// on CUDA one strided 2-D copy per input (cudaMemcpy2DAsync), or a cuDNN
// strided add for GradMode::kAdd; in bf16 or fp16 where the graph computes so
// (computes_16_bit: the copies are of bytes). On CUDA any input and the
// output may also be stored channels-last (NHWC), each on its own: then each
// input moves by one cuDNN transform into its channel slice of y (Note
// [Concat of channels-last values], layers/concat_cuda.cpp). The CPU path is
// NCHW only.
#pragma once

#include <string>
#include <vector>

#include "layers/layer.h"

namespace glassbox {

class Concat final : public Layer {
 public:
  explicit Concat(std::string name) : Layer(std::move(name)) {}

  std::string_view type() const override { return "Concat"; }
  bool backward_reads_input(int) const override { return false; }
  bool backward_reads_output() const override { return false; }
  std::string describe() const override;  // "64 + 128 + 32 + 32 channels"
  int min_inputs() const override { return 2; }
  int max_inputs() const override { return 64; }
  Shape infer(std::span<const Shape> inputs) const override;
  bool computes_16_bit(const Context& ctx) const override { return ctx.is_cuda(); }
  // Prepared for CUDA: every input (rank 4, as infer demands) may be NHWC,
  // and the output may be NHWC whatever the inputs are. The CPU: neither.
  bool can_read_channels_last(int index) const override {
    return prepared_for_cuda() && input_shapes().at(static_cast<size_t>(index)).rank() == 4;
  }
  bool can_write_channels_last(const std::vector<bool>& /*inputs*/) const override {
    return prepared_for_cuda() && output_shape().rank() == 4;
  }

 private:
  void prepare_cpu(Context& ctx, const PrepareOptions& options) override;
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;

  // Fills offsets_ from the bound input shapes (both backends' prepare).
  void compute_offsets();

  // offsets_[i]: the first channel of input i in y; offsets_.back() = C, the total.
  std::vector<int64_t> offsets_;
};

}  // namespace glassbox
