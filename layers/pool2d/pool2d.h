// layers/pool2d/pool2d.h: max and average pooling over square or rectangular windows, on NCHW or NHWC values.
//   x:(N,C,H,W) -> y:(N,C,P,Q),  P = floor((H + 2*pad_h - kernel_h) / stride_h) + 1   (Q likewise)
//   ceil mode (max only, PyTorch's ceil_mode=True; torchvision's GoogLeNet):
//            P = ceil((H + 2*pad_h - kernel_h) / stride_h) + 1, less one if the last window
//            would start at or past H + pad_h (every window starts inside the input or
//            the left padding). The last window may hang past the right padding; the
//            overhang is ignored, as padding is.
//   max:     y[n,c,p,q] = max over the window of x (padding never wins; a NaN
//            always does: Note [Max pooling propagates NaN] in pool2d.cpp)
//            backward: dx[argmax] (= or +=) dy; on the CPU ties go to the first maximum
//            in scan order, NaNs to the last NaN. cuDNN documents no tie rule: on CUDA the maximum value is
//            the same, but on ties the gradient may go to a different element of the
//            window (parity tests use inputs without ties).
//   average: y[n,c,p,q] = sum over the window of x / (kernel_h * kernel_w)
//            (padding counts in the divisor, PyTorch's count_include_pad=True)
//            backward: every x in the window gets dy / (kernel_h * kernel_w)
//            Ceil mode is refused (a ConfigError): PyTorch then divides a window that
//            hangs past the padding by its part inside H + pad only, and whether cuDNN
//            does the same with an enlarged output is unknown; no network here needs it.
//   global average: the window is the whole H x W plane, y:(N,C,1,1)
// CUDA: cuDNN pooling forward/backward (ceil mode: Note [Ceil-mode pooling on cuDNN]),
// in bf16 or fp16 where the graph computes so (computes_16_bit; Note [16-bit pooling]).
#pragma once

#include <string>
#include <vector>

#include "layers/conv2d/conv2d_depthwise.h"
#include "layers/layer.h"
#include "layers/pool2d/pool2d_max.h"
#include "layers/pool2d/pool2d_max_nhwc.h"
#include "layers/size2.h"

namespace glassbox {

// Output length along one axis: `size` inputs, padded by `pad` on each side.
// Assumes the window fits (size + 2 * pad >= kernel) and stride > 0.
int64_t pooled_length(int64_t size, int kernel, int stride, int pad, bool ceil_mode);

class Pool2d final : public Layer {
 public:
  enum class Mode { kMax, kAverage };
  struct Window {
    Size2 kernel = 2;
    Size2 stride = 0;  // 0: the same as the kernel
    Size2 pad = 0;
    bool ceil_mode = false;  // round the output size up (see above); max pooling only
    bool global = false;     // kernel = the whole input plane, stride 1, no padding
  };
  Pool2d(std::string name, Mode mode, Window window);

  std::string_view type() const override { return mode_ == Mode::kMax ? "MaxPool2d" : "AvgPool2d"; }
  std::string describe() const override;  // "3x3 s2", "2x2 s2 p1", "3x3 s2 ceil", "global"
  Shape infer(std::span<const Shape> inputs) const override;
  Mode mode() const { return mode_; }
  // The window in effect (for global pooling: the input plane, known after bind()).
  Window window() const;
  // From an NHWC input to an NHWC or NCHW output (Note [Channels-last values
  // on the CPU]): on the CPU, max pooling, not global, over whole vectors of
  // channels, and global average pooling; on CUDA every window (Note
  // [Channels-last pooling on cuDNN] in pool2d_cuda.cpp).
  bool can_read_channels_last(int index) const override;
  bool can_write_channels_last(const std::vector<bool>& inputs) const override {
    return inputs[0] && can_read_channels_last(0);
  }
  bool computes_16_bit(const Context& ctx) const override { return ctx.is_cuda(); }

 private:
  void prepare_cpu(Context& ctx, const PrepareOptions& options) override;
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
  // Stride-1 average pooling's CPU passes, as depthwise taps (Note [Average
  // pooling by taps] in pool2d.cpp); empty weights: the plain loops.
  DepthwisePlan taps_;
  std::vector<float> tap_weights_;
  // Max windows of column stride 1 or 2 but the 2x2 ones inside the plane, on
  // the CPU (Note [Max pooling by blocks] in pool2d_max.cpp); argmax_ (N,C,P,Q)
  // int32, each window's argmax, kept by a training plan's forward for backward.
  bool max_blocks_ = false;
  MaxPoolPlan max_plan_;
  Tensor argmax_;
  // Max pooling of a channels-last input (layers/pool2d/pool2d_max_nhwc.h); argmax_
  // is then (N, P, Q, C).
  bool nhwc_ = false;
  MaxPoolNhwcPlan nhwc_plan_;
};

}  // namespace glassbox
