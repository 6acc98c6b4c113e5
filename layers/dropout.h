// layers/dropout.h: inverted dropout (Srivastava et al., 2014).
//   training:  m ~ Bernoulli(1 - p) per element, drawn fresh every forward
//              y = x * m / (1 - p)
//   inference, or p = 0: y = x
//   backward:  dx (= or +=) dy * m / (1 - p), or dy after a forward that was the identity
// p can change between steps (set_probability, Graph::set_dropout): a
// schedule, or 0 to turn dropout off for a run without recompiling.
// Seeded: the CPU draws m from the context's RNG; cuDNN's generator is seeded
// from it once, at prepare time. The two backends draw different masks from
// the same seed; each is reproducible on its own. CUDA: cudnnDropoutForward/Backward,
// in fp16 where the graph computes so; a bf16 graph stages the layer in fp32, as
// cuDNN's dropout takes no bfloat16 (computes_16_bit; Note [Dropout in 16 bits]).
#pragma once

#include <string>

#include "layers/layer.h"

namespace glassbox {

class Dropout final : public Layer {
 public:
  struct Options {
    float p = 0.5f;  // probability of zeroing an element, in [0, 1)
  };
  Dropout(std::string name, Options options);

  std::string_view type() const override { return "Dropout"; }
  bool backward_reads_input(int) const override { return false; }
  bool backward_reads_output() const override { return false; }
  std::string describe() const override;  // "p 0.5"
  // The default, plus the mask: forward writes it, backward reads it. Counted
  // as the CPU's float per element; cuDNN's reserve space is smaller (its size
  // is known only after prepare on a GPU), so on a GPU this overcounts.
  int64_t bytes_moved(Pass pass) const override;
  Shape infer(std::span<const Shape> inputs) const override { return inputs[0]; }
  bool computes_16_bit(const Context& ctx) const override {
    return ctx.is_cuda() && ctx.precision() == Precision::kFp16;
  }
  const Options& options() const { return options_; }
  // The probability from the next training forward on, before or after
  // prepare; the next backward still follows the last forward's mask. p in
  // [0, 1), else a ConfigError naming the layer, and p stays as it was. In
  // a compiled graph, change it through Graph::set_dropout: a step replayed
  // as a CUDA graph (optim/step_replay.h) keeps the p it was captured with
  // until the graph's replay generation says that p changed.
  void set_probability(float p);

 private:
  void prepare_cpu(Context& ctx, const PrepareOptions& options) override;
  void prepare_cuda(Context& ctx, const PrepareOptions& options) override;
  void forward_cpu(Context& ctx, const ForwardArgs& args) override;
  void forward_cuda(Context& ctx, const ForwardArgs& args) override;
  void backward_cpu(Context& ctx, const BackwardArgs& args) override;
  void backward_cuda(Context& ctx, const BackwardArgs& args) override;

  Options options_;
  Tensor mask_;  // CPU: m / (1 - p) from the last training forward
  // Backward follows the last forward: through the mask after a training
  // forward at p > 0, straight through after any other.
  bool last_forward_masked_ = false;
};

}  // namespace glassbox
