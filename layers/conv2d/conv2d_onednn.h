// layers/conv2d/conv2d_onednn.h: Conv2d's CPU path on oneDNN (cmake/CpuConv.cmake),
// built only with -DGLASSBOX_CPU_CONV=oneDNN (the default).
//
// Glassbox keeps activations in NCHW (NHWC where the graph stores a value
// channels-last); oneDNN's fast convolutions want their own layouts (NHWC,
// nChw16c and the like, "format any"). So each pass reorders the operands
// whose layouts differ into the workspace, runs oneDNN's primitive there, and
// reorders the result back: the reorders are in the layer's time, as they are
// in the measurements that chose this path (bench/probes/onednn_conv.cpp).
// Everything oneDNN needs (the blocked copies and its own scratchpad) lives
// in the context's workspace, sized at prepare: nothing is
// allocated inside a step. A batch larger than the cache runs by slices, so
// that those copies stay in cache (Note [Convolutions by slices of the batch]
// in layers/conv2d/conv2d_choices_onednn.cpp).
//
// Gradients keep Glassbox's contract: dW is added to (dW += ...), dx written
// or added as the graph asks; both through a reorder with a sum post-op.
#pragma once

#include <memory>
#include <string>

#include "layers/conv2d/conv2d.h"

namespace glassbox {

class OneDnnConv final : public BackendState {
 public:
  struct Plan {
    Phase phase = Phase::kTraining;  // inference builds the forward alone
    // Glassbox's own NCHW and OIHW layouts inside too, so no reorders: for 1x1
    // layers oneDNN then runs its GEMM (x64:gemm:jit) on the tensors in place.
    bool plain_layouts = false;
    // Non-empty: only the forward is built here; the backward runs on the
    // path named (Conv2d runs it), and algorithms() says so.
    std::string backward_elsewhere;
    // The input (and its gradient) and the output (and its gradient) are
    // stored NHWC (Note [Channels-last values], graph/layouts.h):
    // where oneDNN's kernel works in NHWC too, no reorder moves them.
    bool x_channels_last = false, y_channels_last = false;
    // Winograd where it pays (Note [Winograd on the CPU],
    // layers/conv2d/conv2d_choices_onednn.cpp): oneDNN's where it has it,
    // else Glassbox's forward on NHWC values; false: direct kernels only.
    bool winograd = true;
    // y = max(0, conv(x) + b): Note [A ReLU fused into its producer]
    // (graph/fusion.h), applied to each slice of y as the slice is written.
    //
    // Note [No ReLU post-op]: oneDNN 2.6's eltwise ReLU post-op gives 0 for a
    // NaN, so a NaN image passes a convolution fused so and the loss stays
    // finite (FiniteCheck.NonFiniteDataIsTracedToTheInput fails with it),
    // where Glassbox's ReLU keeps NaN and the finite check traces it to the
    // input. So the ReLU runs as Glassbox's own pass over each slice.
    bool relu = false;
  };
  // Builds the primitives for the passes the plan asks for. Throws
  // ConfigError naming `layer` if oneDNN refuses the shapes.
  OneDnnConv(const std::string& layer, const Conv2d::Options& options, const Shape& x, const Shape& y,
             const Plan& plan);
  ~OneDnnConv() override;

  // "oneDNN fwd brgconv:avx512_core, bwd-data jit:avx512_core, bwd-filter jit:avx512_core";
  // Winograd's kernels are jit_wino_4x3:avx512_core
  std::string algorithms() const override;
  // oneDNN found only its reference code ("ref:...") for some pass: correct
  // but far slower than Glassbox's own path (probe: 100x and more).
  bool uses_reference_code() const;
  // The backward-filter is Conv2d's to run, by GEMM on the NHWC values (Note
  // [Weight gradients on NHWC values by GEMM], filter_gradient_nhwc.cpp):
  // backward_filter must not be called, and algorithms() names the kernel
  // oneDNN would have run.
  bool filter_on_nhwc_gemm() const;
  // The forward is Conv2d's to run, by Winograd on the NHWC values (Note
  // [Winograd F(4x4, 3x3) on NHWC values], winograd_nhwc.cpp): forward must
  // not be called, and algorithms() names the kernel oneDNN would have run.
  bool forward_on_nhwc_winograd() const;
  // The same for the backward-data and backward-filter passes.
  bool data_on_nhwc_winograd() const;
  bool filter_on_nhwc_winograd() const;
  size_t workspace_bytes() const;

  void forward(const float* x, const float* w, const float* b, float* y, void* workspace);
  void backward_data(const float* w, const float* dy, float* dx, GradMode mode, void* workspace);
  // dw = (kWrite) or += (kAdd) the filter gradient.
  void backward_filter(const float* x, const float* dy, float* dw, GradMode mode, void* workspace);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace glassbox
