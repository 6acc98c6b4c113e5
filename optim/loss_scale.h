// optim/loss_scale.h: dynamic loss scaling for fp16 training, the state
// machine of torch.amp.GradScaler. The loss is multiplied by `scale` before
// backward, so that small gradients survive fp16; before the update the
// gradients are multiplied by 1/scale, and a step whose gradients hold an inf
// or NaN (the scale was too large) is skipped:
//   found_inf = any(!isfinite(g * inv_scale))        inv_scale = float(1 / double(scale))
//   found_inf:  skip the update; scale *= backoff_factor; clean_steps = 0; skipped_steps += 1
//   otherwise:  apply it; clean_steps += 1; once clean_steps reaches growth_interval,
//               scale *= growth_factor (unless that is not finite) and clean_steps = 0
//
// What uses it is the fp16 train step, in this order: unscale the gradients
// (found_inf), advance the state, then the update applies or not. The state
// machine is one host-and-device function, so that on the GPU a one-thread
// kernel can advance a state kept in device memory with the very code the CPU
// runs, and the host never waits for the flag (the update kernel reads the
// flag itself to apply or skip).
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <type_traits>

// Marks a function that host code and CUDA kernels both call. Headers under
// optim/ include no CUDA header, so outside nvcc it is empty.
#ifdef __CUDACC__
#define GLASSBOX_HOST_DEVICE __host__ __device__
#else
#define GLASSBOX_HOST_DEVICE
#endif

namespace glassbox {

// The defaults are torch.amp.GradScaler's (init_scale 2**16, growth_factor 2,
// backoff_factor 0.5, growth_interval 2000), so a run and its PyTorch peer
// follow the same scale.
struct LossScaleOptions {
  float initial = 65536.0f;     // the scale of the first step
  float growth_factor = 2.0f;   // the scale is multiplied by this after growth_interval clean steps
  float backoff_factor = 0.5f;  // ... and by this at every step that finds an inf or NaN
  int growth_interval = 2000;   // clean steps in a row between two growths
};

// Throws ConfigError naming the field and its value unless initial is finite
// and positive, growth_factor finite and > 1, 0 < backoff_factor < 1 and
// growth_interval >= 1 (NaN passes none of these).
void check_loss_scale_options(const LossScaleOptions& options);

// The loss-scaling state: plain data, so that it can live in device memory
// and be copied there and back (and into checkpoints) as bytes.
struct LossScaleState {
  float scale;            // what the loss is multiplied by; finite, and >= 0
  int32_t clean_steps;    // steps applied since the last growth or skip (PyTorch's growth_tracker)
  int64_t skipped_steps;  // steps skipped since training began: the training loop reports them
};
static_assert(std::is_standard_layout_v<LossScaleState> && std::is_trivial_v<LossScaleState>,
              "LossScaleState is copied to and from device memory as bytes");
static_assert(sizeof(LossScaleState) == 16, "LossScaleState has no padding");
static_assert(std::is_trivially_copyable_v<LossScaleOptions>, "LossScaleOptions is passed to kernels by value");

// The state before the first step. Checks the options (ConfigError).
LossScaleState start_loss_scale(const LossScaleOptions& options);

// What the gradients are multiplied by: the reciprocal computed in double and
// rounded once, as GradScaler's `scale.double().reciprocal().float()` (a
// float division is inexact under nvcc's fast-math options; in double it is
// not). A scale of 0, or one so small that its reciprocal passes float's
// range, gives inf, which makes every gradient non-finite (the comparison
// keeps the conversion in range: an out-of-range double-to-float conversion
// is undefined in C++).
// The least double that rounds to float's infinity: FLT_MAX + 2^103, half an
// ulp above it. A double below it converts to a finite float.
inline constexpr double kRoundsToInfinity = 0x1.ffffffp127;

GLASSBOX_HOST_DEVICE inline float inverse_loss_scale(float scale) {
  const double inverse = 1.0 / static_cast<double>(scale);
  return inverse < kRoundsToInfinity ? static_cast<float>(inverse) : INFINITY;
}

// Note [Advancing the loss scale]: PyTorch's _amp_update_scale_ kernel
// (aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp; the CUDA one in
// native/cuda/AmpKernels.cu is the same), step for step:
// - The products are taken in double (exact: two floats' product fits in
//   53 bits) and rounded once to float, as PyTorch does with its double
//   factors, so the same factors give the same scales bit for bit.
// - A growth whose result would round to inf leaves the scale as it is (and
//   still restarts the count), as PyTorch's "Do not grow the scale past fp32
//   bounds to inf". The test is on the double, against the least double that
//   rounds to inf (FLT_MAX plus half an ulp: a tie, which rounds to even,
//   2^128), because converting a double beyond float's range is undefined
//   behaviour in C++; float(grown) is finite exactly when grown is below it.
// - Backing off is not floored, as in PyTorch: a run that overflows at every
//   step halves the scale to subnormals and then to 0, where every gradient
//   unscales to inf or NaN and every step is skipped. skipped_steps counts
//   them for the training loop to report; a floor would change PyTorch's
//   trajectory without making such a run train.
// - The scale grows when clean_steps reaches growth_interval. PyTorch tests
//   `==`; `>=` is the same for every state this function makes, and still
//   grows a state restored under a smaller growth_interval, where `==` would
//   never grow again.
// Returns whether this step's update applies (!found_inf).
GLASSBOX_HOST_DEVICE inline bool advance_loss_scale(LossScaleState& state, bool found_inf, float growth_factor,
                                                    float backoff_factor, int32_t growth_interval) {
  if (found_inf) {
    state.scale = static_cast<float>(static_cast<double>(state.scale) * static_cast<double>(backoff_factor));
    state.clean_steps = 0;
    state.skipped_steps += 1;
    return false;
  }
  state.clean_steps += 1;
  if (state.clean_steps >= growth_interval) {
    const double grown = static_cast<double>(state.scale) * static_cast<double>(growth_factor);
    if (grown < kRoundsToInfinity) state.scale = static_cast<float>(grown);
    state.clean_steps = 0;
  }
  return true;
}

GLASSBOX_HOST_DEVICE inline bool advance_loss_scale(LossScaleState& state, bool found_inf,
                                                    const LossScaleOptions& options) {
  return advance_loss_scale(state, found_inf, options.growth_factor, options.backoff_factor,
                            options.growth_interval);
}

// Multiplies every gradient by inverse_loss_scale(scale), in place, and
// returns whether any value, before or after, is inf or NaN. One pass over
// the data, over the threads; the values do not depend on the thread count,
// and the flag is an OR, so neither does it.
//
// Checking the products alone covers both: an inf or NaN times any factor
// is inf or NaN. They also catch what PyTorch's check of the inputs misses:
// with a scale below 1 a finite gradient can overflow when unscaled, and the
// update would write inf into the weights. For scale >= 1 (inv_scale <= 1)
// nothing overflows and the flag is PyTorch's.
bool unscale_gradients_cpu(std::span<float> grads, float scale);

}  // namespace glassbox
