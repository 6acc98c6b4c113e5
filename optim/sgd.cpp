// optim/sgd.cpp: checks and the CPU step.
#include "optim/sgd.h"

#include <cmath>

#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"
#include "tensor/copy.h"

namespace glassbox {

Sgd::Sgd(Context& ctx, Tensor params, Tensor grads, SgdOptions options)
    : params_(std::move(params)), grads_(std::move(grads)), options_(options) {
  if (params_.shape() != grads_.shape() || params_.dtype() != DType::kFloat32 || grads_.dtype() != DType::kFloat32) {
    throw ShapeError(cat("Sgd: parameters ", params_.str(), " and gradients ", grads_.str(),
                         " must be float32 of one shape"));
  }
  check_lr(options_.lr);
  // Written so that NaN fails every comparison and so every check.
  if (!(options_.momentum >= 0.0f && options_.momentum <= 1.0f)) {
    throw ConfigError(cat("Sgd: momentum must be in [0, 1], got ", options_.momentum));
  }
  if (!(options_.weight_decay >= 0.0f && std::isfinite(options_.weight_decay))) {
    throw ConfigError(cat("Sgd: weight_decay must be finite and not negative, got ", options_.weight_decay));
  }
  velocity_ = ctx.allocate(params_.shape(), DType::kFloat32, MemoryCategory::kOptimizerState);
  fill_zero(ctx, velocity_);
}

void Sgd::check_lr(float lr) {
  if (!(lr > 0.0f && std::isfinite(lr))) throw ConfigError(cat("Sgd: lr must be positive and finite, got ", lr));
}

void Sgd::set_lr(float lr) {
  check_lr(lr);
  options_.lr = lr;
}

void Sgd::step(Context& ctx) {
  if (params_.device() != ctx.device()) {
    throw Error(cat("Sgd: parameters are on ", params_.device().str(), ", the context is ", ctx.device().str()));
  }
  if (ctx.is_cuda()) {
    step_cuda(ctx);
  } else {
    step_cpu();
  }
}

void Sgd::step_cpu() {
  float* w = params_.data<float>();
  float* g = grads_.data<float>();
  float* v = velocity_.data<float>();
  const float lr = options_.lr, momentum = options_.momentum, decay = options_.weight_decay;
  const bool nesterov = options_.nesterov;
  parallel_for(params_.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    const int64_t n = end - begin;
    auto wv = as_array(w + begin, n);
    auto vv = as_array(v + begin, n);
    auto gv = as_array(g + begin, n);
    vv = momentum * vv + (gv + decay * wv);
    if (nesterov) {
      wv -= lr * ((gv + decay * wv) + momentum * vv);
    } else {
      wv -= lr * vv;
    }
  });
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
void Sgd::step_cuda(Context&) { throw NotBuiltError("Sgd: Glassbox was built without CUDA"); }
}  // namespace glassbox
#endif
