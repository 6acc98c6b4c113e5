// optim/sgd.cpp: checks and the CPU step.
#include "optim/sgd.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include "tensor/convert.h"
#include "tensor/copy.h"
#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"

namespace glassbox {

Sgd::Sgd(Context& ctx, Tensor params, Tensor grads, SgdOptions options, Tensor working)
    : params_(std::move(params)), grads_(std::move(grads)), working_(std::move(working)), options_(options) {
  if (!params_.defined() || !grads_.defined()) {
    throw ConfigError(cat("Sgd: the ", !params_.defined() ? "parameters" : "gradients", " tensor has no storage; "
                          "a graph's parameters() and gradients() have storage once it is compiled"));
  }
  if (params_.shape() != grads_.shape() || params_.dtype() != DType::kFloat32 || grads_.dtype() != DType::kFloat32) {
    throw ShapeError(cat("Sgd: parameters ", params_.str(), " and gradients ", grads_.str(),
                         " must be float32 of one shape"));
  }
  {
    // One buffer as both: each step would subtract the weights from themselves.
    const auto* p = static_cast<const char*>(params_.raw());
    const auto* g = static_cast<const char*>(grads_.raw());
    if (params_.device() == grads_.device() && p < g + grads_.bytes() && g < p + params_.bytes()) {
      throw ConfigError(cat("Sgd: the parameters ", params_.str(), " and the gradients ", grads_.str(),
                            " share memory; give the gradients a buffer of their own"));
    }
  }
  if (working_.defined() && (!is_16_bit_float(working_.dtype()) || working_.numel() != params_.numel() ||
                             working_.device() != params_.device())) {
    throw ShapeError(cat("Sgd: the 16-bit working copy ", working_.str(), " of the parameters ", params_.str(),
                         " must be float16 or bfloat16 with the parameters' ", params_.numel(),
                         " elements, on their device"));
  }
  check_lr(options_.lr);
  // Written so that NaN fails every comparison and so every check.
  if (!(options_.momentum >= 0.0f && options_.momentum <= 1.0f)) {
    throw ConfigError(cat("Sgd: momentum must be in [0, 1], got ", options_.momentum));
  }
  if (!(options_.weight_decay >= 0.0f && std::isfinite(options_.weight_decay))) {
    throw ConfigError(cat("Sgd: weight_decay must be finite and not negative, got ", options_.weight_decay));
  }
  if (!(options_.max_grad_norm >= 0.0f && std::isfinite(options_.max_grad_norm))) {
    throw ConfigError(cat("Sgd: max_grad_norm must be finite and not negative (0: no clipping), got ",
                          options_.max_grad_norm));
  }
  velocity_ = ctx.allocate(params_.shape(), DType::kFloat32, MemoryCategory::kOptimizerState);
  fill_zero(ctx, velocity_);
  if (options_.max_grad_norm > 0.0f) {
    grad_norm_ = ctx.allocate(Shape{1}, DType::kFloat32, MemoryCategory::kOptimizerState);
    from_vector<float>(ctx, std::vector<float>{std::numeric_limits<float>::quiet_NaN()}, grad_norm_);
  }
  if (ctx.is_cuda()) {
    cuda_ = ctx.cuda_state();
    lr_ = ctx.allocate(Shape{1}, DType::kFloat32, MemoryCategory::kOptimizerState);
    store_lr_cuda();
  }
}

float Sgd::last_grad_norm(Context& ctx) const {
  if (!grad_norm_.defined()) return std::numeric_limits<float>::quiet_NaN();
  return to_vector<float>(ctx, grad_norm_)[0];
}

void Sgd::check_lr(float lr) {
  if (!(lr > 0.0f && std::isfinite(lr))) throw ConfigError(cat("Sgd: lr must be positive and finite, got ", lr));
}

void Sgd::set_lr(float lr) {
  // A schedule may decay the rate to 0 (a float underflows after enough
  // steps of gamma), as PyTorch's may: 0 updates nothing, which is what it says.
  if (!(lr >= 0.0f && std::isfinite(lr))) throw ConfigError(cat("Sgd: lr must be 0 or more and finite, got ", lr));
  const bool changed = lr != options_.lr;
  options_.lr = lr;
  if (cuda_ != nullptr && changed) store_lr_cuda();  // the loop sets the rate every step; most steps keep it
}

void Sgd::step(Context& ctx, const int32_t* apply_flag) {
  if (params_.device() != ctx.device()) {
    throw Error(cat("Sgd: parameters are on ", params_.device().str(), ", the context is ", ctx.device().str()));
  }
  if (ctx.is_cuda() && ctx.cuda_state() != cuda_) {
    // set_lr queues its writes on the stream of the context the Sgd was made
    // with: an update on another stream could read the rate before it lands.
    throw Error(cat("Sgd: made with another context on ", ctx.device().str(),
                    "; step it with the context it was made with, on whose stream its rate is written"));
  }
  if (ctx.is_cuda()) {
    step_cuda(ctx, apply_flag);
  } else {
    if (apply_flag != nullptr) {
      throw Error(cat("Sgd: a device flag gates only a CUDA step; on ", ctx.device().str(),
                      " the caller decides on the host whether to step"));
    }
    step_cpu();
  }
}

// The sum of squares in double, per chunk and then over the chunks in chunk
// order: the same bits for a given thread count (docs/determinism.md).
float Sgd::grad_scale_cpu() {
  float* g = grads_.data<float>();  // read only
  const int64_t count = grads_.numel();
  constexpr int64_t kMostChunks = 64;
  const int64_t chunks = std::clamp<int64_t>(count / kElementwiseGrain, 1, kMostChunks);
  std::array<double, kMostChunks> sums{};  // on the stack: nothing allocated per step
  parallel_for(chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t from = count * c / chunks, to = count * (c + 1) / chunks;
      sums[static_cast<size_t>(c)] = as_array(g + from, to - from).cast<double>().square().sum();
    }
  });
  double total = 0.0;
  for (int64_t c = 0; c < chunks; ++c) total += sums[static_cast<size_t>(c)];
  const float norm = static_cast<float>(std::sqrt(total));
  grad_norm_.data<float>()[0] = norm;
  return clip_scale(norm, options_.max_grad_norm);
}

// Note [The update in one pass]: the update is two Eigen statements, the
// velocity and then the weights, and each is its own loop. Over a thread's
// whole range (AlexNet: 7.6M floats, 30 MB an array) the second loop would read
// w and v back from memory; over blocks of kUpdateBlock floats (8 KiB an array)
// it reads them from L1, and each array crosses the memory bus once. The
// working copy is narrowed from the block of w just written, still in L1, so
// it costs its own stores and no second read of w.
constexpr int64_t kUpdateBlock = 2048;

void Sgd::step_cpu() {
  float* w = params_.data<float>();
  float* g = grads_.data<float>();
  float* v = velocity_.data<float>();
  const float lr = options_.lr, momentum = options_.momentum, decay = options_.weight_decay;
  const bool nesterov = options_.nesterov;
  const float scale = options_.max_grad_norm > 0.0f ? grad_scale_cpu() : 1.0f;
  uint16_t* working = working_.defined() ? static_cast<uint16_t*>(working_.raw()) : nullptr;
  const DType working_dtype = working_.dtype();
  auto update_block = [&](int64_t begin, int64_t n) {
    auto wv = as_array(w + begin, n);
    auto vv = as_array(v + begin, n);
    auto update = [&](const auto& gv) {  // gv: the gradient, or the clipped one (not written back)
      vv = momentum * vv + (gv + decay * wv);
      if (nesterov) {
        wv -= lr * ((gv + decay * wv) + momentum * vv);
      } else {
        wv -= lr * vv;
      }
    };
    if (scale == 1.0f) {
      update(as_array(g + begin, n));
    } else {
      update(as_array(g + begin, n) * scale);
    }
    if (working) {
      const auto count = static_cast<size_t>(n);
      narrow_cpu(std::span<const float>(w + begin, count), std::span<uint16_t>(working + begin, count), working_dtype);
    }
  };
  parallel_for(params_.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; b += kUpdateBlock) update_block(b, std::min(end, b + kUpdateBlock) - b);
  });
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
void Sgd::step_cuda(Context&, const int32_t*) { throw NotBuiltError("Sgd: Glassbox was built without CUDA"); }
void Sgd::store_lr_cuda() { throw NotBuiltError("Sgd::set_lr: Glassbox was built without CUDA"); }
}  // namespace glassbox
#endif
