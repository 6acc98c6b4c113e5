// optim/loss_scaler.cpp: the checks, the CPU path, and what the CUDA path
// needs no CUDA header for (its kernels and copies: loss_scaler.cu).
#include "optim/loss_scaler.h"

#include <cfloat>

#include "tensor/error.h"

namespace glassbox {

LossScaler::LossScaler(Context& ctx, LossScaleOptions options)
    : device_of_scaler_(ctx.device()), options_(options), state_(start_loss_scale(options)) {
  if (ctx.is_cuda()) {
    device_ = ctx.allocate(Shape{sizeof(DeviceBlock) / sizeof(int32_t)}, DType::kInt32,
                           MemoryCategory::kOptimizerState);
    cuda_ = ctx.cuda_state();
    // No step has run: none was skipped, and found_inf starts lowered.
    upload({.state = state_, .effective_scale = effective_loss_scale(state_.scale), .found_inf = 0, .applies = 1},
           sizeof(DeviceBlock));
  }
}

const float* LossScaler::device_effective_scale() const {
  return reinterpret_cast<const float*>(static_cast<const char*>(device_.raw()) +
                                        offsetof(DeviceBlock, effective_scale));
}

const int32_t* LossScaler::device_applies() const {
  return reinterpret_cast<const int32_t*>(static_cast<const char*>(device_.raw()) + offsetof(DeviceBlock, applies));
}

void LossScaler::before_backward(Graph& graph) const {
  if (device_.defined()) {
    graph.set_loss_scale_on_device(device_effective_scale());
  } else {
    graph.set_loss_scale(effective_loss_scale(state_.scale));
  }
}

UpdateGate LossScaler::after_backward(Context& ctx, const Tensor& grads) {
  if (ctx.device() != device_of_scaler_) {
    throw Error(cat("LossScaler: made on ", device_of_scaler_.str(), ", the step's context is ", ctx.device().str()));
  }
  if (ctx.is_cuda() && ctx.cuda_state() != cuda_) {
    // state(), restore() and last_step_skipped() read and write on the stream
    // of the context the scaler was made with: the step's kernels must run there.
    throw Error(cat("LossScaler: made with another context on ", ctx.device().str(),
                    "; use it with the context it was made with, on whose stream its state is read"));
  }
  if (!grads.defined() || grads.dtype() != DType::kFloat32 || grads.device() != ctx.device()) {
    throw Error(cat("LossScaler: the gradients must be float32 on ", ctx.device().str(), ", got ",
                    grads.defined() ? grads.str() : std::string("an undefined tensor")));
  }
  if (device_.defined()) {
    unscale_and_advance_cuda(ctx, grads);
    return UpdateGate{.applies = true, .device_flag = device_applies()};
  }
  const float scale = effective_loss_scale(state_.scale);
  const bool found_inf = unscale_gradients_cpu({grads.data<float>(), static_cast<size_t>(grads.numel())}, scale);
  const bool applies = advance_loss_scale(state_, found_inf, options_);
  last_skipped_ = !applies;
  return UpdateGate{.applies = applies, .device_flag = nullptr};
}

LossScaleState LossScaler::state() const { return device_.defined() ? download().state : state_; }

bool LossScaler::last_step_skipped() const { return device_.defined() ? download().applies == 0 : last_skipped_; }

void LossScaler::restore(const LossScaleState& state) {
  if (!(state.scale >= 0.0f && state.scale <= FLT_MAX) || state.clean_steps < 0 || state.skipped_steps < 0) {
    throw ConfigError(cat("LossScaler: a saved state needs a finite scale >= 0 and counts >= 0, got scale ",
                          state.scale, ", clean steps ", state.clean_steps, ", skipped steps ", state.skipped_steps));
  }
  state_ = state;
  if (device_.defined()) {
    // The state and the scale backward reads; found_inf is lowered between
    // steps, and the last step's gate stays as it was, as on the CPU.
    upload({.state = state, .effective_scale = effective_loss_scale(state.scale), .found_inf = 0, .applies = 1},
           offsetof(DeviceBlock, found_inf));
  }
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
void LossScaler::upload(const DeviceBlock&, size_t) const {
  throw NotBuiltError("LossScaler::upload: Glassbox was built without CUDA");
}
LossScaler::DeviceBlock LossScaler::download() const {
  throw NotBuiltError("LossScaler::download: Glassbox was built without CUDA");
}
void LossScaler::unscale_and_advance_cuda(Context&, const Tensor&) {
  throw NotBuiltError("LossScaler::unscale_and_advance_cuda: Glassbox was built without CUDA");
}
}  // namespace glassbox
#endif
