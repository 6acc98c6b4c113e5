// optim/sgd.cu: the SGD update as one kernel over the flat buffers: each
// element's velocity and weight are read and written once (5 x 4 bytes per
// parameter), which is the whole cost of the step.
#include "optim/sgd.h"
#include "tensor/checks_cuda.h"
#include "tensor/context_cuda.h"

namespace glassbox {
namespace {

__global__ void sgd_momentum_kernel(float* __restrict__ w, const float* __restrict__ g, float* __restrict__ v,
                                    int64_t n, float lr, float momentum, float decay, bool nesterov) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float d = g[i] + decay * w[i];
    const float velocity = momentum * v[i] + d;
    v[i] = velocity;
    w[i] -= lr * (nesterov ? d + momentum * velocity : velocity);
  }
}

}  // namespace

void Sgd::step_cuda(Context& ctx) {
  constexpr int kThreads = 256;
  const int64_t n = params_.numel();
  // Enough blocks to fill the GPU several times over; the grid-stride loop covers the rest.
  const int blocks = static_cast<int>(std::min<int64_t>((n + kThreads - 1) / kThreads, 65536));
  sgd_momentum_kernel<<<blocks, kThreads, 0, stream_of(ctx)>>>(params_.data<float>(), grads_.data<float>(),
                                                              velocity_.data<float>(), n, options_.lr,
                                                              options_.momentum, options_.weight_decay,
                                                              options_.nesterov);
  CUDA_CHECK_LAUNCH();
}

}  // namespace glassbox
