// layers/conv2d.h: 2-D cross-correlation, NCHW, with stride, padding, dilation and groups.
//   x:(N,C,H,W)  w:(K,C/G,R,S)  b:(K)  ->  y:(N,K,P,Q)
//   P = (H + 2*pad_h - dil_h*(R-1) - 1) / stride_h + 1      (Q likewise)
//   y[n,k,p,q] = b[k] + sum_{c in group(k), r, s} w[k,c,r,s] * x[n,c, p*stride_h - pad_h + r*dil_h, q*stride_w - pad_w + s*dil_w]
//   backward: dx (= or +=) conv_transpose(dy, w);  dw += corr(x, dy);  db += sum_{n,p,q} dy
//
// CPU: im2col + GEMM, tiled. Work items are (image, group, tile of output
// pixels); each thread unfolds its tile into its slice of the workspace and
// multiplies it with Eigen single-threaded, so the unfolded tile stays in
// cache and the two cores never wait on each other inside a product.
// CUDA: cuDNN's convolution, with the algorithms chosen at compile time (cuDNN's
// heuristics by default, measured search on request), the workspace sized from
// the choice, and a fall-back to the next candidate when one is not supported
// or does not fit. Every choice is recorded for reports.
#pragma once

#include <string>

#include "layers/layer.h"
#include "layers/size2.h"

namespace glassbox {

class Conv2d final : public Layer {
 public:
  struct Options {
    int out_channels = 0;
    Size2 kernel = 3;
    Size2 stride = 1;
    Size2 pad = 0;
    Size2 dilation = 1;
    int groups = 1;
    bool bias = true;
  };
  Conv2d(std::string name, Options options);

  std::string_view type() const override { return "Conv2d"; }
  std::string describe() const override;  // "3x3 s1 p1, 64 -> 128" (+ " d2", " g32", ", no bias")
  Shape infer(std::span<const Shape> inputs) const override;
  std::vector<ParamSpec> param_specs() const override;  // weight: He normal; bias: zeros
  int64_t macs() const override;                        // N*K*P*Q * (C/G)*R*S
  const Options& options() const { return options_; }

 private:
  void prepare_cpu(Context& ctx, const PrepareOptions& options) override;
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;

  Options options_;
};

}  // namespace glassbox
