// layers/pool2d.h: max and average pooling over square or rectangular windows, NCHW.
//   x:(N,C,H,W) -> y:(N,C,P,Q),  P = (H + 2*pad_h - kernel_h) / stride_h + 1   (Q likewise)
//   max:     y[n,c,p,q] = max over the window of x (padding never wins)
//            backward: dx[argmax] (= or +=) dy; ties go to the first maximum in scan order
//   average: y[n,c,p,q] = sum over the window of x / (kernel_h * kernel_w)
//            (padding counts in the divisor, PyTorch's count_include_pad=True)
//            backward: every x in the window gets dy / (kernel_h * kernel_w)
//   global average: the window is the whole H x W plane, y:(N,C,1,1)
// CUDA: cuDNN pooling forward/backward.
#pragma once

#include <string>

#include "layers/layer.h"
#include "layers/size2.h"

namespace glassbox {

class Pool2d final : public Layer {
 public:
  enum class Mode { kMax, kAverage };
  struct Window {
    Size2 kernel = 2;
    Size2 stride = 0;  // 0: the same as the kernel
    Size2 pad = 0;
    bool global = false;  // kernel = the whole input plane, stride 1, no padding
  };
  Pool2d(std::string name, Mode mode, Window window);

  std::string_view type() const override { return mode_ == Mode::kMax ? "MaxPool2d" : "AvgPool2d"; }
  std::string describe() const override;  // "3x3 s2", "2x2 s2 p1", "global"
  Shape infer(std::span<const Shape> inputs) const override;
  Mode mode() const { return mode_; }
  // The window in effect (for global pooling: the input plane, known after bind()).
  Window window() const;

 private:
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;

  // The window for this input: stride 0 resolved to the kernel; for global
  // pooling the input plane (input null: before bind, the options as given).
  Window resolve(const Shape* input) const;

  Mode mode_;
  Window window_;
};

}  // namespace glassbox
