// layers/batch_norm/batch_norm.h: batch normalisation over (N, H, W) per channel (Ioffe & Szegedy, 2015).
//   x:(N,C,H,W)  scale:(C)  shift:(C)  ->  y:(N,C,H,W)
//   training:  mean[c] = E[x[:,c]],  var[c] = E[(x[:,c] - mean[c])^2]   (biased, over M = N*H*W)
//              y = scale * (x - mean) / sqrt(var + eps) + shift
//              running_mean = (1 - momentum) * running_mean + momentum * mean
//              running_var  = (1 - momentum) * running_var  + momentum * var * M / (M - 1)   (unbiased)
//   inference: y = scale * (x - running_mean) / sqrt(running_var + eps) + shift
//   backward (training), with xhat = (x - mean) / sqrt(var + eps):
//              dshift += sum dy;  dscale += sum dy * xhat
//              dx (= or +=) scale / sqrt(var + eps) * (dy - mean(dy) - xhat * mean(dy * xhat))
// Running statistics start at mean 0, variance 1 and are layer state, not
// parameters (not trained, not in the gradient buffer). CUDA: cuDNN's spatial
// batch norm (training, inference, backward); in a bf16 or fp16 graph x, y, dx
// and dy are 16-bit while scale, shift, their gradients and the statistics stay
// fp32 (computes_16_bit; Note [Batch norm's fp32 side] in batch_norm_cuda.cpp).
// Backward is the training one: it needs the batch statistics of a training
// forward just before it, and fails after an inference-phase forward (the
// gradient of the inference formula, with fixed statistics, is not offered).
// On CUDA, a backward that wants no input gradient uses y's memory as scratch
// for cuDNN's dx (y is dead by then; Note [BatchNorm2d scratch dx]).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "layers/layer.h"

namespace glassbox {

// Note [Batch norm and ReLU in one cuDNN call]: whether cuDNN's Ex batch
// norm applies a ReLU after it (CUDNN_BATCHNORM_OPS_BN_ACTIVATION; with
// `residual`, a residual add and then the ReLU, ..._BN_ADD_ACTIVATION) for
// these values, forward and backward: training only (cuDNN's inference call
// takes no activation), in the persistent NHWC mode (Note [Persistent batch
// norm on NHWC]), on float32, bfloat16 or float16 values, and for the
// residual add only, a channel count that is a multiple of 4. The API
// reference names float16 for these kernels since cuDNN 8.2; cuDNN 9's
// library holds the fused ReLU and add-ReLU instances for float and
// bfloat16 as well (batchnorm_relu_bwtr_nhwc_semiPersist<__nv_bfloat16, ..>
// and <float, ..> in libcudnn_ops.so). Pure, so that the rule is tested
// without a GPU; on a GPU the layer also asks its cuDNN
// (cudnn_fused_batch_norm_refusal) before it takes a ReLU, so that a
// cuDNN without those instances keeps the ReLU apart and says so.
bool cudnn_fuses_batch_norm_relu(Phase phase, bool channels_last, DType values, int64_t channels, bool residual);

// Asks the cuDNN of ctx (a CUDA context) for the workspace and reserve sizes
// of the Ex batch norm with a fused ReLU (with `residual`, a fused residual
// add and ReLU) on an NHWC training batch x of `values`, forward and
// backward. Returns "" where cuDNN gives all three, else its status
// ("CUDNN_STATUS_NOT_SUPPORTED"), or why no descriptor takes x (a size past
// INT_MAX). Allocates and runs nothing: the first half of what BatchNorm2d
// asks at compile time (cudnn_fused_batch_norm_refusal). Throws
// NotBuiltError in a build without CUDA.
std::string cudnn_fused_batch_norm_size_refusal(const Context& ctx, const Shape& x, DType values, bool residual);

// Asks the cuDNN of ctx (a CUDA context) whether its Ex batch norm runs with
// a fused ReLU (with `residual`, a fused residual add and ReLU,
// CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION) on an NHWC training batch x of
// `values`: a training forward and a backward on that shape, with the ops
// and reserve of that fusion. Returns "" where both succeed, else the call
// that failed and cuDNN's status ("backward: CUDNN_STATUS_NOT_SUPPORTED"),
// so that a refusal is told from a wrong argument. What the GPU tests check
// cudnn_fuses_batch_norm_relu against. Throws NotBuiltError in a build
// without CUDA.
// Runs on buffers of its own, outside the memory plan, and waits for the device.
std::string cudnn_batch_norm_relu_refusal(const Context& ctx, const Shape& x, DType values, bool residual = false);

// What BatchNorm2d asks at compile time before it takes a ReLU (or an add and
// a ReLU): "" where cuDNN gives the fused call's sizes for x
// (cudnn_fused_batch_norm_size_refusal) and runs it on a batch of at most two
// samples of x's channels and size (cudnn_batch_norm_relu_refusal), else why
// not. The run is made once per device, shape, type and fusion in a process.
// Throws NotBuiltError in a build without CUDA.
std::string cudnn_fused_batch_norm_refusal(const Context& ctx, const Shape& x, DType values, bool residual);

class BatchNorm2d final : public Layer {
 public:
  struct Options {
    float eps = 1e-5f;
    float momentum = 0.1f;
  };
  BatchNorm2d(std::string name, Options options);

  std::string_view type() const override { return "BatchNorm2d"; }
  bool backward_reads_output() const override { return false; }  // x and the saved statistics
  bool backward_reads_input(int index) const override { return index == 0; }  // not a fused residual
  // Per channel, in whichever order the values come, NCHW or NHWC, y and the
  // gradients as x (Note [Channels-last values], graph/layouts.h):
  // on the CPU by layers/batch_norm/batch_norm_nhwc.cpp, on CUDA by cuDNN
  // (Note [Persistent batch norm on NHWC] in batch_norm_cuda.cpp).
  bool keeps_layout() const override { return true; }
  std::string describe() const override;  // "64 channels, eps 1e-05, momentum 0.1"
  Shape infer(std::span<const Shape> inputs) const override;
  std::vector<ParamSpec> param_specs() const override;  // scale: ones; shift: zeros
  bool keeps_fp32_parameters() const override { return true; }
  bool computes_16_bit(const Context& ctx) const override { return ctx.is_cuda(); }
  // Note [A ReLU fused into its producer] (graph/fusion.h): on the CPU always
  // (y = max(0, .) as each value is normalised; in backward dy taken where
  // y > 0 as it is read); on CUDA where cudnn_fuses_batch_norm_relu and the
  // cuDNN of ctx gives the fused call's sizes for this shape.
  bool can_fuse_relu(const Context& ctx, Phase phase) const override;
  bool fuses_relu_backward() const override { return true; }
  // Note [A residual add fused into its batch norm] (graph/fusion.h): on the
  // CPU always (z added as each value is normalised; z's gradient written
  // from the masked dy); on CUDA where cudnn_fuses_batch_norm_relu with the
  // residual holds and cuDNN gives CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION's sizes.
  bool can_fuse_residual_relu(const Context& ctx, Phase phase) const override;
  const Options& options() const { return options_; }

  std::vector<NamedTensor> state() const override;  // running_mean, running_var
  std::vector<StateSpec> state_specs() const override;  // the same: (C) each
  // Valid after prepare(): (C) float32 on the layer's device.
  const Tensor& running_mean() const { return running_mean_; }
  const Tensor& running_var() const { return running_var_; }

 private:
  void prepare_cpu(Context& ctx, const PrepareOptions& options) override;
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;
  // The CPU passes on NHWC values (layers/batch_norm/batch_norm_nhwc.cpp); the
  // workspace holds their per-chunk sums.
  void forward_cpu_nhwc(Context& ctx, const ForwardArgs& args, bool training);
  void backward_cpu_nhwc(Context& ctx, const BackwardArgs& args);
  size_t nhwc_workspace_bytes() const;
  // A training forward's statistics of channel c: saved for backward, added
  // into the running ones; returns 1 / sqrt(var + eps). var is biased.
  double record_batch_statistics(int64_t c, double mean, double var);

  // Shared by prepare_cpu and prepare_cuda: running statistics (mean 0,
  // variance 1) and the saved batch statistics, on ctx's device.
  void allocate_state(Context& ctx);
  // Checks shared by both backends.
  void check_training_batch() const;   // forward in training needs N*H*W > 1
  void check_saved_statistics() const;  // backward needs a training forward before it

  // cuDNN's smallest epsilon (CUDNN_BN_MIN_EPSILON in cudnn_ops.h, 0 in cuDNN 9),
  // enforced on both backends; batch_norm_cuda.cpp checks it still agrees.
  static constexpr double kMinEpsilon = 0.0;

  Options options_;
  bool last_forward_trained_ = false;  // the saved statistics are the last forward's
  Tensor running_mean_;
  Tensor running_var_;
  Tensor saved_mean_;     // batch mean of the last training forward, for backward
  Tensor saved_inv_std_;  // 1 / sqrt(var + eps) of the last training forward
};

// Note [Batch norm inference in slices]: cuDNN 9.19's
// cudnnBatchNormalizationForwardInference refuses a batch of more than
// 65,535 (CUDNN_STATUS_NOT_SUPPORTED; undocumented, its argument check
// "xDescInternal.dimA[0] > 65535"; PyTorch keeps such batches off it too).
// With fixed statistics the forward is per element, so a larger batch runs
// in slices of at most that many samples, each contiguous in NCHW and NHWC.
inline constexpr int64_t kCudnnInferenceBatchLimit = 65'535;

// The (first sample, count) slices of a batch of `n`, in order, each of at
// most `limit` samples: {{0, n}} where n <= limit.
std::vector<std::pair<int64_t, int64_t>> batch_slices(int64_t n, int64_t limit);

}  // namespace glassbox
