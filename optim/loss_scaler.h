// optim/loss_scaler.h: fp16's dynamic loss scaling in a training step
// (optim/train_step.h), on the state machine of optim/loss_scale.h:
//   before backward:  graph.set_loss_scale(scale): backward's gradients come
//                     out multiplied by it (Note [Mixed precision], graph/mixed_precision.h)
//   after backward (and the all-reduce, so that every rank decides alike):
//                     the gradients are divided by it, and a step whose
//                     gradients hold an inf or NaN is skipped, the scale halved
// The CPU runs it; on a CUDA device the constructor throws ConfigError (the
// GPU's fp16 path is not built yet).
#pragma once

#include "graph/graph.h"
#include "optim/loss_scale.h"

namespace glassbox {

class LossScaler {
 public:
  // Checks the options (ConfigError naming the field).
  LossScaler(const Context& ctx, LossScaleOptions options);

  void before_backward(Graph& graph) const;
  // Unscales `grads` (the graph's flat fp32 gradients) in place and advances
  // the state; returns whether the update applies.
  bool after_backward(Context& ctx, const Tensor& grads);

  const LossScaleOptions& options() const { return options_; }
  const LossScaleState& state() const { return state_; }
  // A checkpoint's state, to resume with (its scale must be finite and not
  // negative, its counts not negative: ConfigError otherwise).
  void restore(const LossScaleState& state);
  bool last_step_skipped() const { return last_skipped_; }

 private:
  LossScaleOptions options_;
  LossScaleState state_;
  bool last_skipped_ = false;
};

}  // namespace glassbox
