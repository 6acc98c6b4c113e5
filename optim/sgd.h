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
