// optim/loss_scale.cpp: the options' checks and the CPU unscale.
#include "optim/loss_scale.h"

#include <atomic>
#include <cmath>

#include "tensor/error.h"
#include "tensor/parallel_for.h"

namespace glassbox {

// Written so that NaN fails every comparison and so every check.
void check_loss_scale_options(const LossScaleOptions& options) {
  if (!(options.initial > 0.0f && std::isfinite(options.initial))) {
    throw ConfigError(cat("loss scaling: initial must be finite and positive, got ", options.initial));
  }
  if (!(options.growth_factor > 1.0f && std::isfinite(options.growth_factor))) {
    throw ConfigError(cat("loss scaling: growth_factor must be finite and greater than 1, got ",
                          options.growth_factor));
  }
  if (!(options.backoff_factor > 0.0f && options.backoff_factor < 1.0f)) {
    throw ConfigError(cat("loss scaling: backoff_factor must be in (0, 1), got ", options.backoff_factor));
  }
  if (!(options.growth_interval >= 1)) {
    throw ConfigError(cat("loss scaling: growth_interval must be at least 1, got ", options.growth_interval));
  }
}

LossScaleState start_loss_scale(const LossScaleOptions& options) {
  check_loss_scale_options(options);
  return LossScaleState{.scale = options.initial, .clean_steps = 0, .skipped_steps = 0};
}

namespace {

// Unscales g[0, n) and returns whether a product is inf or NaN. The flag is
// an int OR, which GCC vectorises with the multiply; a bool OR keeps the loop
// scalar.
bool unscale_range(float* g, int64_t n, float inv_scale) {
  int not_finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float unscaled = g[i] * inv_scale;
    g[i] = unscaled;
    not_finite |= !std::isfinite(unscaled);
  }
  return not_finite != 0;
}

}  // namespace

bool unscale_gradients_cpu(std::span<float> grads, float scale) {
  const float inv_scale = inverse_loss_scale(scale);
  float* g = grads.data();
  // Chunks only ever store true, and the team's join orders the stores before the load.
  std::atomic<bool> found_inf{false};
  parallel_for(static_cast<int64_t>(grads.size()), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    if (unscale_range(g + begin, end - begin, inv_scale)) found_inf.store(true, std::memory_order_relaxed);
  });
  return found_inf.load(std::memory_order_relaxed);
}

}  // namespace glassbox
