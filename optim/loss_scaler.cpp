// optim/loss_scaler.cpp
#include "optim/loss_scaler.h"

#include <cfloat>

#include "tensor/error.h"

namespace glassbox {

LossScaler::LossScaler(const Context& ctx, LossScaleOptions options)
    : options_(options), state_(start_loss_scale(options)) {
  if (ctx.is_cuda()) {
    throw ConfigError(cat("loss scaling on ", ctx.device().str(),
                          ": the GPU's fp16 path is not built yet; fp16 with loss scaling runs on the CPU"));
  }
}

void LossScaler::before_backward(Graph& graph) const {
  // A scale that backed off to 0 (every step overflowing) still runs the
  // step, at the smallest positive scale, and is skipped as before.
  graph.set_loss_scale(state_.scale > 0.0f ? state_.scale : FLT_TRUE_MIN);
}

bool LossScaler::after_backward(Context& ctx, const Tensor& grads) {
  if (!grads.defined() || grads.dtype() != DType::kFloat32 || grads.device() != ctx.device()) {
    throw Error(cat("LossScaler: the gradients must be float32 on ", ctx.device().str(), ", got ",
                    grads.defined() ? grads.str() : std::string("an undefined tensor")));
  }
  const float scale = state_.scale > 0.0f ? state_.scale : FLT_TRUE_MIN;
  const bool found_inf = unscale_gradients_cpu({grads.data<float>(), static_cast<size_t>(grads.numel())}, scale);
  const bool applies = advance_loss_scale(state_, found_inf, options_);
  last_skipped_ = !applies;
  return applies;
}

void LossScaler::restore(const LossScaleState& state) {
  if (!(state.scale >= 0.0f && state.scale <= FLT_MAX) || state.clean_steps < 0 || state.skipped_steps < 0) {
    throw ConfigError(cat("LossScaler: a saved state needs a finite scale >= 0 and counts >= 0, got scale ",
                          state.scale, ", clean steps ", state.clean_steps, ", skipped steps ", state.skipped_steps));
  }
  state_ = state;
}

}  // namespace glassbox
