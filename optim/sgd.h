// optim/sgd.h: stochastic gradient descent with momentum and weight decay, one
// pass over the flat parameter buffer (torch.optim.SGD's convention, dampening 0):
//   d = g + weight_decay * w
//   v = momentum * v + d
//   w = w - lr * v                        (classical momentum)
//   w = w - lr * (d + momentum * v)       (Nesterov: Sutskever et al., 2013, as PyTorch writes it)
// Weight decay applies to every parameter, biases included (as PyTorch's
// default). CPU: Eigen over thread-sized chunks; CUDA: one fused kernel (sgd.cu).
#pragma once

#include "tensor/context.h"
#include "tensor/tensor.h"

namespace glassbox {

struct SgdOptions {
  float lr = 0.01f;
  float momentum = 0.9f;
  float weight_decay = 5e-4f;
  bool nesterov = false;
};

// SGD settings of every benchmark train step and of the CLI commands that time
// train steps on the synthetic batch (the PyTorch peer uses the same).
//
// Note [The benchmarks' learning rate]: a step costs the same at any learning
// rate, but it must compute finite numbers to be a fair measurement. At lr
// 0.01 (momentum 0.9), VGG16, which has no batch norm, sends the loss on its
// fixed synthetic batch of 2 to NaN by step 6: earlier train_step timings of
// the VGGs on the CPU timed NaN arithmetic, found once every step's loss was
// checked. At 1e-4 every network stayed finite (VGG16 batch 2 for 30 steps,
// AlexNet batch 16 and 128, LeNet batch 64 and 256 for 300 steps); a run that
// still diverges now stops with an error instead of timing garbage.
inline constexpr SgdOptions kBenchmarkSgd{.lr = 1e-4f, .momentum = 0.9f, .weight_decay = 5e-4f};

class Sgd {
 public:
  // params and grads: the graph's flat buffers (Graph::parameters(), gradients()).
  // Allocates the velocity (optimizer state), zeroed. Throws ConfigError unless
  // lr is positive and finite, momentum in [0, 1] and weight_decay finite and
  // not negative (NaN is none of these).
  Sgd(Context& ctx, Tensor params, Tensor grads, SgdOptions options);

  void step(Context& ctx);
  const SgdOptions& options() const { return options_; }
  void set_lr(float lr);  // checked as in the constructor
  // The momentum buffers v, laid out as the parameters (Graph::named_views
  // names them): checkpoints save and restore them.
  const Tensor& velocity() const { return velocity_; }

 private:
  static void check_lr(float lr);
  void step_cpu();
  void step_cuda(Context& ctx);

  Tensor params_;
  Tensor grads_;
  Tensor velocity_;
  SgdOptions options_;
};

}  // namespace glassbox
