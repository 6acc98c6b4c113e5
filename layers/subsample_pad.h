// layers/subsample_pad.h: the parameter-free residual shortcut of He et al.
// (2016), option A: keep every stride-th pixel and pad the new channels with zeros.
//   x:(N,C,H,W) -> y:(N,K,P,Q),  P = ceil(H / stride), Q = ceil(W / stride),  K = out_channels
//   y[:, f : f+C] = x[:, :, ::stride, ::stride]   (f = first_channel)
//   y[:, :f] = 0,  y[:, f+C:] = 0
//   backward: dx[:, :, ::stride, ::stride] (= or +=) dy[:, f : f+C]; dx elsewhere (= 0 or unchanged)
// first_channel = 0 puts x first, as fb.resnet.torch's shortcut type A does
// (concatenating zeros after x); first_channel = (K - C) / 2 centres it, as
// the common PyTorch CIFAR ResNets do (F.pad with K/4 zero channels each side).
// CUDA: cuDNN only: cudnnTransformTensor between a strided view of x (the
// stride-grid pixels) and a view of y's channels [f, f+C), cudnnSetTensor for the zeros.
#pragma once

#include <string>

#include "layers/layer.h"

namespace glassbox {

class SubsamplePad final : public Layer {
 public:
  struct Options {
    int stride = 1;
    int out_channels = 0;
    int first_channel = 0;  // where x's channels start in y
  };
  SubsamplePad(std::string name, Options options);

  std::string_view type() const override { return "SubsamplePad"; }
  bool backward_reads_input(int) const override { return false; }  // dx is dy, moved back: no x, no y
  bool backward_reads_output() const override { return false; }
  // NCHW or NHWC, y and dx as x, on the CPU and on CUDA (Note [Channels-last
  // values], graph/layouts.h; the views' strides per layout are in
  // subsample_pad_cuda.cpp).
  bool keeps_layout() const override { return true; }
  std::string describe() const override;  // "s2, 16 -> 32 channels (x at 8)"
  Shape infer(std::span<const Shape> inputs) const override;
  const Options& options() const { return options_; }

 private:
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;
  void forward_cpu_nhwc(const ForwardArgs& args);
  void backward_cpu_nhwc(const BackwardArgs& args);

  Options options_;
};

}  // namespace glassbox
