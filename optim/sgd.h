// optim/sgd.h: stochastic gradient descent with momentum and weight decay, one
// pass over the flat parameter buffer (torch.optim.SGD's convention, dampening 0):
//   d = g + weight_decay * w
//   v = momentum * v + d
//   w = w - lr * v                        (classical momentum)
//   w = w - lr * (d + momentum * v)       (Nesterov: Sutskever et al., 2013, as PyTorch writes it)
// Weight decay applies to every parameter, biases included (as PyTorch's
// default). CPU: Eigen over thread-sized chunks; CUDA: one fused kernel (sgd.cu).
// The same formulas, not always the same bits: the compilers fuse
// momentum * v + d into one multiply-add, rounded once, where PyTorch's
// mul_ then add_ round twice, so the two drift apart by about an ulp a step.
//
// Gradient-norm clipping (max_grad_norm > 0), as torch.nn.utils.clip_grad_norm_
// before the step: with ||g|| the L2 norm of all the gradients together,
//   g = g * min(1, max_grad_norm / (||g|| + 1e-6))
// The language models need it (Zaremba et al. clip at 5). The scale is folded
// into the update's one pass, so clipping costs one more read of the
// gradients (the norm), not a read and a write; on CUDA the norm stays on the
// device (cuBLAS nrm2 into device memory), so the step still never waits.
//
// Mixed precision: the optimizer updates float32 master weights, and the
// layers of a 16-bit graph read a float16 or bfloat16 copy of them (the
// working copy). Given one, each step writes w rounded to the copy's type
// (round to nearest even, tensor/convert.h) into it, in the same pass as the
// update, while the updated w is still in cache (in registers on CUDA): the
// layers read the new weights without another pass over the buffer.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "tensor/context.h"
#include "tensor/serial.h"
#include "tensor/tensor.h"

namespace glassbox {

struct SgdOptions {
  float lr = 0.01f;
  float momentum = 0.9f;
  float weight_decay = 5e-4f;
  bool nesterov = false;
  float max_grad_norm = 0.0f;  // clip the gradients' global L2 norm to this; 0: no clipping
  bool operator==(const SgdOptions&) const = default;
};

// SGD settings of every benchmark train step and of the CLI commands that time
// train steps on the synthetic batch (the PyTorch peer uses the same).
//
// Note [The benchmarks' learning rate]: a step costs the same at any learning
// rate, but it must compute finite numbers to be a fair measurement. At lr
// 0.01 (momentum 0.9), VGG16, which has no batch norm, sends the loss on its
// fixed synthetic batch of 2 to NaN within a few steps, and a step on NaNs
// times NaN arithmetic. At 1e-4 every network stays finite (VGG16 batch 2 for
// 30 steps, AlexNet batch 16 and 128, LeNet batch 64 and 256 for 300 steps);
// a run that still diverges stops with an error, since every step's loss is
// checked, instead of timing garbage.
inline constexpr SgdOptions kBenchmarkSgd{.lr = 1e-4f, .momentum = 0.9f, .weight_decay = 5e-4f};

// What clipping multiplies the gradients by: min(1, max_norm / (norm + 1e-6)).
// A norm that is NaN or infinite gives NaN, so that the step makes the loss
// NaN and checked_loss reports it (torch.nn.utils.clip_grad_norm_ would scale
// by 0 for an infinite norm: a silently skipped update).
// Shared by the CPU step and the CUDA kernel (sgd.cu), hence host and device.
#ifdef __CUDACC__
__host__ __device__
#endif
inline float clip_scale(float norm, float max_norm) {
  if (!(norm <= FLT_MAX)) return nanf("");  // NaN or infinite: neither is <= FLT_MAX
  return norm > max_norm ? max_norm / (norm + 1e-6f) : 1.0f;
}

class Sgd {
 public:
  // params and grads: the graph's flat buffers (Graph::parameters(), gradients()).
  // Allocates the velocity (optimizer state), zeroed. Throws ConfigError unless
  // lr is positive and finite, momentum in [0, 1] and weight_decay finite and
  // not negative (NaN is none of these).
  // working: undefined (no 16-bit copy), or the parameters' 16-bit working
  // copy: float16 or bfloat16, the parameters' element count, on their device
  // (ShapeError naming both tensors otherwise). Each step writes every element
  // of it, those in the alignment gaps between parameters too (zero, as the
  // gaps of the parameters are). The constructor does not write it: the graph
  // fills it when it initialises or loads the parameters.
  Sgd(Context& ctx, Tensor params, Tensor grads, SgdOptions options, Tensor working = Tensor());

  // apply_flag: null (the update applies), or on a CUDA device an int32 in
  // device memory that the update kernel reads: 0 skips the update, which
  // then writes nothing (weights, velocity and working copy stay as they
  // were), anything else applies it (fp16's loss scaling, optim/loss_scaler.h:
  // the host never waits for the flag). With clipping the gradients' norm is
  // still computed on a skipped step, and last_grad_norm reports it. Error on
  // the CPU, whose caller knows on the host whether to step.
  void step(Context& ctx, const int32_t* apply_flag = nullptr);
  const SgdOptions& options() const { return options_; }
  // Checked as in the constructor, but 0 too is a rate here: a schedule may
  // decay to it. On a CUDA device the update kernel reads
  // the rate from device memory, which this queues a write of on the
  // optimizer's stream, so that a step captured as a CUDA graph (optim/step_replay.h)
  // takes each new rate without being captured again.
  void set_lr(float lr);
  // The gradients' L2 norm before clipping, in the last step (NaN before the
  // first step and when not clipping). Not finite where a gradient is not:
  // inf on the CPU, inf or NaN on a GPU (cuBLAS's nrm2). Waits for the device.
  float last_grad_norm(Context& ctx) const;
  // The momentum buffers v, laid out as the parameters (Graph::named_views
  // names them): checkpoints save and restore them.
  const Tensor& velocity() const { return velocity_; }
  // The 16-bit working copy of the parameters; undefined where there is none.
  const Tensor& working() const { return working_; }
  // The buffers each step reads and writes, as the constructor took them.
  const Tensor& params() const { return params_; }
  const Tensor& grads() const { return grads_; }
  // Distinct for every Sgd made in this process (tensor/serial.h): a step
  // captured with one optimizer replays its buffers, not another's
  // (optim/step_replay.h).
  uint64_t serial() const { return serial_; }

 private:
  static void check_lr(float lr);
  void step_cpu();
  float grad_scale_cpu();  // min(1, max_grad_norm / (||g|| + 1e-6)), the norm kept in grad_norm_
  void step_cuda(Context& ctx, const int32_t* apply_flag);
  void store_lr_cuda();  // options_.lr into lr_, queued on cuda_'s stream

  Tensor params_;
  Tensor grads_;
  Tensor velocity_;
  Tensor grad_norm_;  // (1): the last step's gradient norm, where clipping is on
  Tensor working_;    // float16 or bfloat16, written by each step; undefined: none
  Tensor lr_;         // CUDA: (1), the learning rate the update kernel reads; undefined on the CPU
  CudaResources* cuda_ = nullptr;  // CUDA: the stream set_lr writes lr_ on; lr_'s allocator keeps it alive
  SgdOptions options_;
  uint64_t serial_ = next_serial();
};

}  // namespace glassbox
