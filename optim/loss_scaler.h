// optim/loss_scaler.h: fp16's dynamic loss scaling in a training step
// (optim/train_step.h), on the state machine of optim/loss_scale.h:
//   before backward:  the graph multiplies the loss's gradient by the scale:
//                     backward's gradients come out multiplied by it
//                     (Note [Mixed precision], graph/mixed_precision.h)
//   after backward (and the all-reduce, so that every rank decides alike):
//                     the gradients are divided by it, and a step whose
//                     gradients hold an inf or NaN is skipped, the scale halved
//
// On the CPU the state lives on the host and after_backward says whether the
// update applies. On a CUDA device the state lives in device memory and the
// host never waits for it inside a step (loss_scaler.cu): backward reads the
// scale there (Graph::set_loss_scale_on_device), one kernel unscales the
// gradients and raises a device flag on an inf or NaN, a one-thread kernel
// advances the state with the CPU's very function (advance_loss_scale), and
// the update kernel reads whether it applies from device memory
// (Sgd::step's apply_flag). Only state() and last_step_skipped() wait for
// the device, so a training loop reads them where it reports, not per step.
#pragma once

#include <cfloat>
#include <cstddef>
#include <cstdint>

#include "graph/graph.h"
#include "optim/loss_scale.h"
#include "tensor/serial.h"

namespace glassbox {

// The scale a step runs at: a scale that backed off to 0 (every step
// overflowing) still runs the step, at the smallest positive float, and its
// gradients unscale to inf or NaN (inverse_loss_scale is inf), so the step is
// skipped as before. The CPU and the CUDA kernels both use this function.
GLASSBOX_HOST_DEVICE inline float effective_loss_scale(float scale) { return scale > 0.0f ? scale : FLT_TRUE_MIN; }

// Whether a step's update applies. The CPU knows on the host (`applies`); on
// a CUDA device the answer is an int32 in device memory (`device_flag`,
// nonzero: applies), which the update kernel reads itself (Sgd::step), so
// the host never waits for it.
struct UpdateGate {
  bool applies = true;                   // the answer where device_flag is null
  const int32_t* device_flag = nullptr;  // CUDA: where the answer is, valid until the next step's after_backward
};

class LossScaler {
 public:
  // Checks the options (ConfigError naming the field). On a CUDA device it
  // allocates the state in device memory (MemoryCategory::kOptimizerState)
  // and waits for the copy that starts it.
  LossScaler(Context& ctx, LossScaleOptions options);

  // Points the graph at the scale: the host value on the CPU; on a CUDA
  // device the address of the scale in the scaler's memory, which backward
  // reads from then on (until set_loss_scale or set_loss_scale_on_device
  // says otherwise), so the scaler outlives the backward passes it scales.
  void before_backward(Graph& graph) const;
  // Unscales `grads` (the graph's flat fp32 gradients, on the scaler's
  // device) in place and advances the state. CPU: returns whether the update
  // applies. CUDA: queues the work on ctx's stream and returns the device
  // flag, without waiting.
  UpdateGate after_backward(Context& ctx, const Tensor& grads);

  const LossScaleOptions& options() const { return options_; }
  // The state after the steps queued so far. On a CUDA device it copies the
  // state from device memory and waits for the device: read it where a
  // training loop reports (once an epoch), not at every step.
  LossScaleState state() const;
  // A checkpoint's state, to resume with (its scale must be finite and not
  // negative, its counts not negative: ConfigError otherwise). On a CUDA
  // device it is copied to device memory, stream-ordered after the steps
  // queued so far, and waits for the copy.
  void restore(const LossScaleState& state);
  // Whether the last step's update was skipped (false before the first
  // step). On a CUDA device it reads the device flag and waits for the device.
  bool last_step_skipped() const;
  // Distinct for every LossScaler made in this process (tensor/serial.h),
  // as Sgd::serial.
  uint64_t serial() const { return serial_; }

 private:
  // On a CUDA device: the state and what a step's kernels pass each other,
  // in one allocation (32 bytes).
  struct DeviceBlock {
    LossScaleState state;
    float effective_scale;  // effective_loss_scale(state.scale): what backward multiplies the loss gradient by
    int32_t found_inf;      // raised by the unscale kernel, read and lowered by the advance kernel: 0 between steps
    int32_t applies;        // the last step's gate, read by the update kernel: 1 applied, 0 skipped
    int32_t unused = 0;
  };
  static_assert(sizeof(DeviceBlock) == 32 && offsetof(DeviceBlock, effective_scale) == sizeof(LossScaleState),
                "DeviceBlock is copied to and from device memory as bytes");

  // Device address arithmetic only: these pointers are never dereferenced on the host.
  const float* device_effective_scale() const;
  const int32_t* device_applies() const;

  // loss_scaler.cu (NotBuiltError in a CPU-only build). upload: the first
  // `bytes` of `block` into device memory, then waits (the source is a host
  // local). download: the whole block, after the work queued so far.
  void upload(const DeviceBlock& block, size_t bytes) const;
  DeviceBlock download() const;
  void unscale_and_advance_cuda(Context& ctx, const Tensor& grads);

  Device device_of_scaler_;
  LossScaleOptions options_;
  LossScaleState state_;       // the CPU's state; on a CUDA device the state is in device_
  bool last_skipped_ = false;  // the CPU's; on a CUDA device, DeviceBlock::applies
  Tensor device_;              // CUDA: one DeviceBlock; undefined on the CPU
  CudaResources* cuda_ = nullptr;  // CUDA: the context's stream; device_'s allocator keeps it alive
  uint64_t serial_ = next_serial();
};

}  // namespace glassbox
