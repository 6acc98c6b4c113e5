// layers/conv2d/conv2d.h: 2-D cross-correlation, NCHW, with stride, padding, dilation and groups.
//   x:(N,C,H,W)  w:(K,C/G,R,S)  b:(K)  ->  y:(N,K,P,Q)
//   P = (H + 2*pad_h - dil_h*(R-1) - 1) / stride_h + 1      (Q likewise)
//   y[n,k,p,q] = b[k] + sum_{c in group(k), r, s} w[k,c,r,s] * x[n,c, p*stride_h - pad_h + r*dil_h, q*stride_w - pad_w + s*dil_w]
//   backward: dx (= or +=) conv_transpose(dy, w);  dw += corr(x, dy);  db += sum_{n,p,q} dy
//
// CPU: three paths, chosen per layer (and pass) at prepare (Conv2d::CpuPath):
//   - oneDNN's convolutions (layers/conv2d/conv2d_onednn.h) for kernels larger than
//     1x1, and the forward of pointwise layers, in builds with oneDNN
//     (cmake/CpuConv.cmake, the default);
//   - Glassbox's own im2col + GEMM, tiled (layers/conv2d/conv2d_im2col.cpp): 1x1
//     layers (the backward of pointwise ones), builds without oneDNN, and the
//     plain reference the oneDNN path is tested against. Work items are
//     (image, group, tile of output pixels); each thread unfolds its tile into
//     its slice of the workspace and multiplies it with Eigen single-threaded;
//   - stride-1 depthwise layers (groups == C) skip the GEMM: layers/conv2d/conv2d_depthwise.h.
// CUDA: cuDNN's convolution, with the algorithms chosen at compile time (cuDNN's
// heuristics by default, measured search on request), the workspace sized from
// the choice, and a fall-back to the next candidate when one is not supported
// or does not fit. Every choice is recorded for reports. On CUDA the layer
// computes in bf16 or fp16 itself where the graph does (computes_16_bit):
// 16-bit data, fp32 accumulation, tensor-core kernels (conv2d_cuda.cpp).
//
// Note [KRSC filters]: cuDNN's NHWC convolutions, its tensor-core kernels
// among them, take the filter in the same order as the data: (K, R, S, C/G),
// output channel outermost and input channel fastest (cudnnSetFilter4dDescriptor
// with CUDNN_TENSOR_NHWC), as PyTorch's channels_last weights are. So a CUDA
// convolution whose output is channels-last declares its weight KRSC
// (ParamSpec::layout): the graph stores it so, the optimizer updates it in
// that order (it is element-wise), and checkpoints transpose it to and from
// PyTorch's KCRS (graph/layouts.h, values_in_nchw_order). Its shape stays
// (K, C/G, R, S). Everywhere else the weight is KCRS, as oneDNN's CPU
// convolutions reorder theirs themselves.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "layers/layer.h"
#include "layers/size2.h"

namespace glassbox {

struct DepthwisePlan;    // layers/conv2d/conv2d_depthwise.h
struct NhwcFilterShape;  // layers/conv2d/filter_gradient_nhwc.h
struct WinogradShape;    // layers/conv2d/winograd_nhwc.h

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
  bool backward_reads_output() const override { return false; }  // dW needs x, dx needs W
  // cuDNN takes 16-bit data with fp32 accumulation; the CPU path is fp32 only.
  bool computes_16_bit(const Context& ctx) const override { return ctx.is_cuda(); }
  std::string describe() const override;  // "3x3 s1 p1, 64 -> 128" (+ " d2", " g32", ", no bias")
  Shape infer(std::span<const Shape> inputs) const override;
  std::vector<ParamSpec> param_specs() const override;  // weight: He normal; bias: zeros
  int64_t macs() const override;                        // N*K*P*Q * (C/G)*R*S
  bool splits_backward() const override { return true; }  // dx, then dw and db
  const Options& options() const { return options_; }

  // ---- The CPU path ----
  // kAuto: oneDNN where the build has it and the kernel is larger than 1x1
  // (faster there: bench/probes/onednn_conv.cpp),
  // unless oneDNN offers only its reference code for these shapes; stride-1
  // depthwise layers take their direct path; pointwise layers (1x1, stride 1,
  // no padding) run their forward on oneDNN's GEMM in Glassbox's own layout
  // and their backward on Glassbox's 1x1 GEMM (each measured the faster for
  // its pass); everything else Glassbox's im2col + GEMM (kGlassbox, which also
  // covers the depthwise path). The path comes from PrepareOptions::cpu_conv
  // unless pinned here; prepare() on the CPU throws ConfigError for kOneDnn in
  // a build without oneDNN. algorithms() names the path of each pass.
  using CpuPath = CpuConvPath;
  void pin_cpu_path(CpuPath path) { cpu_pin_ = path; }
  // As prepared: kGlassbox or kOneDnn (kAuto before), for the forward pass
  // and for the backward passes.
  CpuPath cpu_path() const { return plan_.path; }
  CpuPath cpu_backward_path() const { return plan_.backward_path; }
  // Where every pass runs on oneDNN in its own layouts (not the 1x1 forward
  // in Glassbox's): the input and output may be NHWC, as its brgconv works
  // (Note [Channels-last values], graph/layouts.h). A strided
  // 1x1 layer without padding or groups on the automatic path, in a build
  // with oneDNN, may too: with both NHWC it runs as products over all pixels
  // (Note [1x1 convolutions on NHWC values], which says why stride-1 ones do
  // not offer it); with its input alone NHWC, on oneDNN.
  // On CUDA any convolution reads and writes either layout: it computes in
  // its output's, with its filter in that order too (Note [KRSC filters]),
  // and converts an input stored in the other (Note [Layout bridges],
  // layers/layer_cuda.h).
  // Note [A ReLU fused into its producer] (graph/fusion.h): on the CPU every
  // path (a pass over each slice of y as it is written); on CUDA with a bias, through
  // cudnnConvolutionBiasActivationForward, which needs one.
  bool can_fuse_relu(const Context& ctx, Phase) const override { return !ctx.is_cuda() || options_.bias; }
  bool can_read_channels_last(int index) const override {
    if (prepared_for_cuda()) return index == 0;
    return index == 0 && (plan_.onednn_layouts || plan_.strided_1x1_nhwc_offered);
  }
  bool can_write_channels_last(const std::vector<bool>& inputs) const override {
    if (prepared_for_cuda()) return true;
    return plan_.onednn_layouts || (plan_.strided_1x1_nhwc_offered && inputs.at(0));
  }

  // ---- cuDNN algorithms (CUDA devices only) ----
  // The three passes, each with its own cuDNN algorithm.
  enum class Pass { kForward, kBackwardData, kBackwardFilter };
  static constexpr int kPassCount = 3;
  // What prepare() saw of one algorithm for one pass.
  struct AlgorithmCandidate {
    int algo = 0;                // the cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t value; -1 for an engine
    std::string name;            // "IMPLICIT_PRECOMP_GEMM", "ALGO_1", ..., "engine 12 (TILE_SIZE 3, ...)"
    bool supported = false;      // cuDNN reported success for these shapes and math mode
    size_t workspace_bytes = 0;  // as cuDNN reported it
    float time_ms = -1.0f;       // measured search only; -1 otherwise
    std::string verdict;         // "chosen", "not tried", or why it was skipped
    bool deterministic = false;  // cuDNN reports it CUDNN_DETERMINISTIC (same bits on every run)
    bool tensor_op = false;      // cuDNN reports tensor-op math for it (a pin: its heuristic entry's)
    // A graph-API engine configuration's global index (its knobs are in
    // `name`); -1 for a legacy algorithm, whose number is `algo`.
    int64_t engine = -1;
  };
  // Pins algorithms by number for the next prepare() on a CUDA device, e.g.
  //   conv.pin_algorithms({.backward_data = 1});   // CUDNN_CONVOLUTION_BWD_DATA_ALGO_1
  // kChoose leaves a pass to the usual choice (heuristics or measured search).
  // prepare() throws ConfigError if a pinned algorithm does not support these
  // shapes, needs more than the workspace limit or its workspace cannot be had,
  // or is not deterministic where PrepareOptions::deterministic asks for that.
  static constexpr int kChoose = -1;
  struct AlgorithmPins {
    int forward = kChoose;
    int backward_data = kChoose;
    int backward_filter = kChoose;
  };
  void pin_algorithms(AlgorithmPins pins) { pins_ = pins; }
  const AlgorithmPins& pinned_algorithms() const { return pins_; }
  // Every algorithm cuDNN listed for `pass` at the last CUDA prepare(), in its
  // order (heuristic rank, or measured time), with the verdict on each. Empty
  // before a CUDA prepare() and after a CPU one. A pinned pass lists only the pin.
  const std::vector<AlgorithmCandidate>& algorithm_candidates(Pass pass) const {
    return candidates_[static_cast<size_t>(pass)];
  }

 private:
  // The CPU path's fixed sizes, set by prepare_cpu (see conv2d.cpp).
  struct CpuPlan {
    int64_t n = 0, c = 0, h = 0, w = 0, k = 0, p = 0, q = 0;
    int64_t groups = 1, cg = 0, kg = 0, r = 0, s = 0;
    int64_t crs = 0;                // rows of a group's unfolded input: (C/G) * R * S
    int64_t tile = 0, tiles = 0;    // output pixels per tile, tiles per image (forward, backward-data)
    int64_t filter_tile = 0, filter_tiles = 0;  // the same for backward-filter
    int64_t channel_blocks = 1;     // backward-data work items per (image, group)
    bool pointwise = false;         // 1x1, stride 1, no padding: x is its own unfolding
    bool depthwise = false;         // one input channel per group: layers/conv2d/conv2d_depthwise.cpp
    CpuPath path = CpuPath::kAuto;           // what prepare chose for the forward
    CpuPath backward_path = CpuPath::kAuto;  // ... and for the backward
    bool onednn_layouts = false;    // every pass on oneDNN, in the layouts it chose
    // kAuto, oneDNN built in, strided_1x1_nhwc_shape(): NHWC x and y would
    // take layers/conv2d/conv2d_strided_1x1_nhwc.cpp, every pass one product ...
    bool strided_1x1_nhwc_offered = false;
    bool strided_1x1_nhwc = false;  // ... and they did
    int threads = 1;                // also backward-filter's slots (Note [Reproducible weight gradients])
    int64_t col_floats = 0;         // per-thread unfolded tile
    int64_t partial_floats = 0;     // per-slot (but slot 0) partial weight gradient
  };
  void check_options() const;
  DepthwisePlan depthwise_plan() const;
  float* cpu_workspace(const Context& ctx) const;
  // The layer as layers/conv2d/filter_gradient_nhwc.h describes it.
  NhwcFilterShape nhwc_filter_shape() const;
  // The layer as layers/conv2d/winograd_nhwc.h describes it.
  WinogradShape winograd_shape() const;
  // db += per-channel sums of dy; uses threads x K floats of workspace for NHWC dy.
  void bias_gradient(const float* dy, float* db, GradMode mode, float* workspace) const;
  // False where `asked` is kAuto and oneDNN has only reference code for these
  // shapes. `pointwise_forward`: oneDNN runs the forward alone, in Glassbox's layout.
  bool prepare_onednn(const PrepareOptions& options, CpuPath asked, bool pointwise_forward);
  // Glassbox's own im2col + GEMM path: layers/conv2d/conv2d_im2col.cpp.
  void plan_im2col();
  void forward_im2col(const ForwardArgs& args, float* workspace) const;
  void backward_data_im2col(const BackwardArgs& args, float* workspace) const;
  void backward_filter_im2col(const BackwardArgs& args, float* workspace) const;
  // 1x1 layers on NHWC values (Note [1x1 convolutions on NHWC values]):
  // layers/conv2d/conv2d_strided_1x1_nhwc.cpp. The shape it takes: 1x1, strided, no padding, one group.
  bool strided_1x1_nhwc_shape() const;
  void plan_strided_1x1_nhwc();
  const float* strided_rows(const float* x, float* workspace) const;
  void forward_strided_1x1_nhwc(const ForwardArgs& args, float* workspace) const;
  void backward_data_strided_1x1_nhwc(const BackwardArgs& args, float* workspace) const;
  void backward_filter_strided_1x1_nhwc(const BackwardArgs& args, float* workspace) const;

  void prepare_cpu(Context& ctx, const PrepareOptions& options) override;
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  bool writes_param_grads_on_cpu() const override { return true; }
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;

  Options options_;
  CpuPlan plan_;
  AlgorithmPins pins_;
  CpuPath cpu_pin_ = CpuPath::kAuto;
  std::array<std::vector<AlgorithmCandidate>, kPassCount> candidates_;
  Layout filter_layout_ = Layout::kNCHW;  // Note [KRSC filters]: set by prepare
};

}  // namespace glassbox
