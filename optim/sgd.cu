// optim/sgd.cu: the SGD update as one kernel over the flat buffers: each
// element's velocity and weight are read and written once and its gradient
// read once (5 x 4 bytes per parameter, plus 2 where the kernel also writes
// the 16-bit working copy), which is the whole cost of the step.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "optim/sgd.h"
#include "tensor/checks_cuda.h"
#include "tensor/context_cuda.h"

namespace glassbox {
namespace {

// The working copy's element type when there is none: the kernel for it
// compiles without the store, so the float32-only step costs what it did.
struct NoWorkingCopy {};

// apply: null (the update applies) or a device int32 read first: 0 returns
// at once, writing nothing (fp16's skipped step, optim/loss_scaler.h).
// grad_norm: null (no clipping) or the gradients' norm, on the device.
// Working: __half or __nv_bfloat16, the type of the working copy the kernel
// writes w into (rounded to nearest even, as tensor/convert.h's CPU rounding),
// or NoWorkingCopy (working is null).
// lr: the learning rate, in device memory (Sgd::set_lr writes it).
template <typename Working>
__global__ void sgd_momentum_kernel(float* __restrict__ w, const float* __restrict__ g, float* __restrict__ v,
                                    int64_t n, const float* __restrict__ lr_in, float momentum, float decay,
                                    bool nesterov,
                                    const float* __restrict__ grad_norm, float max_grad_norm,
                                    Working* __restrict__ working, const int32_t* __restrict__ apply) {
  if (apply != nullptr && *apply == 0) return;
  const float lr = *lr_in;
  const float scale = grad_norm ? clip_scale(*grad_norm, max_grad_norm) : 1.0f;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float d = scale * g[i] + decay * w[i];
    const float velocity = momentum * v[i] + d;
    v[i] = velocity;
    w[i] -= lr * (nesterov ? d + momentum * velocity : velocity);
    if constexpr (std::is_same_v<Working, __half>) {
      working[i] = __float2half_rn(w[i]);
    } else if constexpr (std::is_same_v<Working, __nv_bfloat16>) {
      working[i] = __float2bfloat16_rn(w[i]);
    }
  }
}

// *at = value: a kernel rather than a copy, so that the value travels in the
// launch's arguments and the host may change it again at once.
__global__ void store_kernel(float* at, float value) { *at = value; }

}  // namespace

void Sgd::store_lr_cuda() {
  store_kernel<<<1, 1, 0, cuda_->stream.get()>>>(lr_.data<float>(), options_.lr);
  CUDA_CHECK_LAUNCH();
}

void Sgd::step_cuda(Context& ctx, const int32_t* apply_flag) {
  constexpr int kThreads = 256;
  const int64_t n = params_.numel();
  if (n == 0) return;  // nothing to update, and a grid of no blocks is an invalid launch
  // Enough blocks to fill the GPU several times over; the grid-stride loop covers the rest.
  const int blocks = static_cast<int>(std::min<int64_t>((n + kThreads - 1) / kThreads, 65536));
  float* grad_norm = nullptr;
  if (options_.max_grad_norm > 0.0f) {
    // Note [A norm left on the device]: in device pointer mode cuBLAS writes
    // the result to device memory and returns without waiting, so the kernel
    // below reads it in stream order; the handle goes back to host mode,
    // which every other caller of it assumes.
    grad_norm = grad_norm_.data<float>();
    cublasHandle_t cublas = cublas_of(ctx);
    CUBLAS_CHECK(cublasSetPointerMode(cublas, CUBLAS_POINTER_MODE_DEVICE));
    const cublasStatus_t status = cublasSnrm2_64(cublas, n, grads_.data<float>(), 1, grad_norm);
    CUBLAS_CHECK(cublasSetPointerMode(cublas, CUBLAS_POINTER_MODE_HOST));
    CUBLAS_CHECK(status);
  }
  auto launch = [&](auto* working) {
    using Working = std::remove_pointer_t<decltype(working)>;
    sgd_momentum_kernel<Working><<<blocks, kThreads, 0, stream_of(ctx)>>>(
        params_.data<float>(), grads_.data<float>(), velocity_.data<float>(), n, lr_.data<float>(),
        options_.momentum, options_.weight_decay, options_.nesterov, grad_norm, options_.max_grad_norm, working,
        apply_flag);
  };
  if (!working_.defined()) {
    launch(static_cast<NoWorkingCopy*>(nullptr));
  } else if (working_.dtype() == DType::kFloat16) {
    launch(static_cast<__half*>(working_.raw()));
  } else {  // bfloat16: the constructor admits no other type
    launch(static_cast<__nv_bfloat16*>(working_.raw()));
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace glassbox
