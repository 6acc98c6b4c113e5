// layers/linear/linear.h: fully connected layer on (N, in) rows.
//   x:(N,I)  w:(O,I)  b:(O)  ->  y:(N,O)
//   y = x w^T + b
//   backward: dx (= or +=) dy w;  dw += dy^T x;  db += sum_n dy[n,:]
// With Options::over_last_dim, x may be (..., I) -> y:(..., O), as PyTorch's
// nn.Linear: every leading dimension is batch, and the maths above runs on
// the N = numel / I rows of x (a (T, B, H) sequence: T*B rows). It is an
// option, not the default, because a rank-4 (N, C, H, W) input reaching a
// classifier's Linear is almost always a missing flatten, and accepting it
// would silently build a different network (Note [Linear over leading dims]).
// Weights are (out, in) as in PyTorch, so parameter counts and initial values
// line up with torchvision's. CPU: up to 16 rows Glassbox's own loops that
// stream the weights once (Note [Linear forward at small batches]); above,
// the forward on oneDNN's matmul up to 1024 rows (Note [Linear forward on
// oneDNN's matmul]) and the rest Eigen products over blocks of features, one
// block per OpenMP work item (Note [Blocked linear products]); CUDA:
// cuBLASLt, with the bias, a fused ReLU and the bias gradient in its
// epilogues, in bf16 or fp16 with fp32 accumulation where the graph computes
// so (computes_16_bit), float32 otherwise.
#pragma once

#include "layers/layer.h"
#include "layers/linear/gemm_plan.h"

namespace glassbox {

class Linear final : public Layer {
 public:
  struct Options {
    int out_features = 0;
    bool bias = true;
    // Accept x of any rank >= 2 and apply the layer to its last dimension.
    bool over_last_dim = false;
  };
  Linear(std::string name, Options options);

  std::string_view type() const override { return "Linear"; }
  bool backward_reads_output() const override { return false; }  // dW needs x, dx needs W
  // cuBLAS takes 16-bit data with fp32 accumulation; the CPU path is fp32 only.
  bool computes_16_bit(const Context& ctx) const override { return ctx.is_cuda(); }
  // Note [A ReLU fused into its producer] (graph/fusion.h): the CPU applies
  // max(0, .) to each block of y as it is written; cuBLASLt in the forward
  // product's epilogue (layers/linear/linear_cuda.cpp). The backward stays the ReLU's.
  bool can_fuse_relu(const Context&, Phase) const override { return true; }
  std::string describe() const override;
  Shape infer(std::span<const Shape> inputs) const override;
  std::vector<ParamSpec> param_specs() const override;
  int64_t macs() const override;
  bool splits_backward() const override { return true; }  // dx, then dw and db
  // On a CUDA device: kGemmEx runs every product on cublasGemmEx, with the
  // bias and a fused ReLU as one pass of their own, the route of Note [When
  // cuBLASLt refuses a product] (layers/linear/gemm_plan.h), whatever
  // cuBLASLt offers. The GPU tests compare it with cuBLASLt's; the CPU
  // ignores it.
  void pin_cuda_library(LinearLibrary library) { cuda_library_ = library; }

 private:
  void prepare_cpu(Context& ctx, const PrepareOptions& options) override;
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  bool writes_param_grads_on_cpu() const override { return true; }
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;

  // From the bound input: its last dimension, and the rows the layer runs on
  // (every leading dimension is batch: (N, I) has N rows, (T, B, I) T*B).
  int64_t in_features() const;
  int64_t rows() const;

  Options options_;
  // Threads that run the CPU backward-data by tiles, each with its buffer in
  // the workspace (fixed at prepare); 0: in place (Note [Weights whose rows
  // alias in the cache] in linear.cpp).
  int tiled_backward_threads_ = 0;
  LinearLibrary cuda_library_ = LinearLibrary::kAuto;
};

}  // namespace glassbox
