// layers/embedding.h: a lookup table of learned vectors, one per token.
//   tokens:(...) int32 in [0, V)  weight:(V,E)  ->  y:(..., E)
//   y[p, :] = weight[tokens[p], :]                 for every position p, e.g. (t, b)
//   backward: dweight[tokens[p], :] += dy[p, :]    (a scatter-add; positions that
//             share a token add into the same row); the tokens get no gradient.
// "weight" is PyTorch's nn.Embedding name and layout, initialised U(-r, r)
// with r = Options::init_range (0.1 as in Zaremba et al., 2014 and PyTorch's
// word_language_model example; nn.Embedding's own default is N(0, 1)).
//
// CPU: the forward copies rows in parallel over positions; the backward
// splits the E columns over the threads and walks the positions in order in
// each, so rows shared by several positions never race and the sums have one
// order whatever the thread count. A token outside [0, V) is an Error naming
// the layer, the position and the value.
// CUDA: hand-written kernels (embedding.cu; no cuDNN/cuBLAS call gathers or
// scatter-adds rows). The kernels cannot throw: a token outside [0, V) makes
// its output row NaN (never a silent wrong number) and adds nothing to the
// gradient. The backward uses float atomicAdd, whose order varies run to run;
// with PrepareOptions::deterministic it runs an ordered kernel instead
// (Note [Deterministic embedding gradient] in embedding_cuda.cpp).
#pragma once

#include <string>

#include "layers/layer.h"

namespace glassbox {

class Embedding final : public Layer {
 public:
  struct Options {
    int vocabulary = 0;        // V: tokens are in [0, V)
    int dim = 0;               // E: the length of each vector
    float init_range = 0.1f;   // weight ~ U(-init_range, init_range)
  };
  Embedding(std::string name, Options options);

  std::string_view type() const override { return "Embedding"; }
  std::string describe() const override;  // "10000 x 650"
  DType input_dtype(int /*index*/) const override { return DType::kInt32; }
  // Backward reads the tokens and dy; neither the output nor the table.
  bool backward_reads_output() const override { return false; }
  // In a bf16 or fp16 graph the table stays fp32, as autocast keeps it: the
  // layer computes in fp32 (its values are staged), and a gather rounds each
  // row to 16 bits as it stores the output either way, so a 16-bit copy of
  // the table would only be widened back into staging every forward.
  bool keeps_fp32_parameters() const override { return true; }
  Shape infer(std::span<const Shape> inputs) const override;
  std::vector<ParamSpec> param_specs() const override;
  // A gather: no multiply-accumulates (macs() = 0), and traffic that the
  // defaults get wrong (see embedding.cpp).
  int64_t bytes_moved(Pass pass) const override;
  const Options& options() const { return options_; }

 private:
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;

  // Throws Error naming the first position whose token is outside [0, V).
  void check_tokens(const Tensor& tokens) const;

  Options options_;
  // CUDA: the ordered backward kernel instead of atomics (unread in a CPU-only build).
  [[maybe_unused]] bool deterministic_ = false;
};

}  // namespace glassbox
