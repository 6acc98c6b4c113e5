// layers/lrn.h: local response normalisation across channels (AlexNet, 2012).
//   x:(N,C,H,W) -> y:(N,C,H,W)
//   s[n,c,h,w] = k + alpha / size * sum_{c' = c - size/2 .. c + size/2, 0 <= c' < C} x[n,c',h,w]^2
//   y = x * s^(-beta)
//   backward: dx[c'] (= or +=) dy[c'] * s[c']^(-beta)
//                   - 2 * alpha * beta / size * x[c'] * sum_{c whose window holds c'} dy[c] * x[c] * s[c]^(-beta - 1)
// size must be odd, so the window is centred (PyTorch's LocalResponseNorm and
// cuDNN agree on that case). CUDA: cudnnLRNCrossChannelForward/Backward, in
// fp16 where the graph computes so; a bf16 graph stages the layer in fp32, as
// cuDNN's LRN takes no bfloat16 (computes_16_bit; Note [LRN in 16 bits]).
#pragma once

#include <string>

#include "layers/layer.h"

namespace glassbox {

class LocalResponseNorm final : public Layer {
 public:
  struct Options {
    int size = 5;
    float alpha = 1e-4f;
    float beta = 0.75f;
    float k = 2.0f;
  };
  LocalResponseNorm(std::string name, Options options);

  std::string_view type() const override { return "LocalResponseNorm"; }
  std::string describe() const override;  // "size 5, alpha 0.0001, beta 0.75, k 2"
  Shape infer(std::span<const Shape> inputs) const override;
  bool computes_16_bit(const Context& ctx) const override {
    return ctx.is_cuda() && ctx.precision() == Precision::kFp16;
  }
  const Options& options() const { return options_; }

 private:
  void prepare_cpu(Context& ctx, const PrepareOptions& options) override;
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;

  // cuDNN's limits (cudnn_ops.h: CUDNN_LRN_MIN_N, _MAX_N, _MIN_K, _MIN_BETA),
  // enforced on both backends so that a net runs on either; lrn_cuda.cpp
  // checks they still agree with the cuDNN it is built against.
  static constexpr int kMinSize = 1;
  static constexpr int kMaxSize = 16;
  static constexpr double kMinK = 1e-5;
  static constexpr double kMinBeta = 0.01;

  Options options_;
  Tensor scale_;  // s from the last forward (CPU), kept for backward
};

}  // namespace glassbox
