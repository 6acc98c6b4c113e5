// optim/loss_scaler.cu: fp16's loss scaling on a CUDA device, all in stream
// order so that a step never waits for the host or the host for it:
//   unscale_kernel:  g *= inverse_loss_scale(effective_scale) over the flat
//                    gradients (grid-stride); any product inf or NaN raises found_inf
//   advance_kernel:  one thread: advance_loss_scale(state, found_inf), the
//                    code the CPU runs; writes the gate the update kernel
//                    reads (applies), the next step's effective scale, and
//                    lowers found_inf for the next step
// The products are the CPU's bit for bit (unscale_gradients_cpu): one IEEE
// float multiply by the same factor, which inverse_loss_scale rounds once
// from a double division (IEEE on the device too).
#include <cuda_runtime.h>

#include <algorithm>

#include "optim/loss_scaler.h"
#include "tensor/checks_cuda.h"
#include "tensor/context_cuda.h"

namespace glassbox {
namespace {

// scale: the effective scale, read on the device (never 0: effective_loss_scale).
// found_inf: raised (set to 1) by every thread that meets an inf or NaN
// product; the threads only ever store 1, so the races between them are
// benign and the result is an OR.
__global__ void unscale_kernel(float* __restrict__ g, int64_t n, const float* __restrict__ scale,
                               int32_t* __restrict__ found_inf) {
  const float inv_scale = inverse_loss_scale(*scale);
  bool not_finite = false;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float unscaled = g[i] * inv_scale;
    g[i] = unscaled;
    not_finite |= !isfinite(unscaled);
  }
  if (not_finite) *found_inf = 1;
}

// One thread: the state machine on the device's state.
__global__ void advance_kernel(LossScaleState* state, float* effective_scale, int32_t* found_inf, int32_t* applies,
                               LossScaleOptions options) {
  LossScaleState next = *state;
  const bool update = advance_loss_scale(next, *found_inf != 0, options);
  *state = next;
  *applies = update ? 1 : 0;
  *effective_scale = effective_loss_scale(next.scale);
  *found_inf = 0;
}

}  // namespace

void LossScaler::upload(const DeviceBlock& block, size_t bytes) const {
  cudaStream_t stream = cuda_->stream.get();
  CUDA_CHECK(cudaMemcpyAsync(device_.raw(), &block, bytes, cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));  // `block` is the caller's local
}

LossScaler::DeviceBlock LossScaler::download() const {
  DeviceBlock block;
  cudaStream_t stream = cuda_->stream.get();
  CUDA_CHECK(cudaMemcpyAsync(&block, device_.raw(), sizeof(DeviceBlock), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return block;
}

void LossScaler::unscale_and_advance_cuda(Context& ctx, const Tensor& grads) {
  constexpr int kThreads = 256;
  cudaStream_t stream = stream_of(ctx);
  auto* block = static_cast<DeviceBlock*>(device_.raw());  // device memory: member addresses only, never read here
  const int64_t n = grads.numel();
  if (n > 0) {  // a grid of no blocks is a launch error
    // Enough blocks to fill the GPU several times over; the grid-stride loop covers the rest.
    const int blocks = static_cast<int>(std::min<int64_t>((n + kThreads - 1) / kThreads, 65536));
    unscale_kernel<<<blocks, kThreads, 0, stream>>>(grads.data<float>(), n, &block->effective_scale,
                                                    &block->found_inf);
    CUDA_CHECK_LAUNCH();
  }
  advance_kernel<<<1, 1, 0, stream>>>(&block->state, &block->effective_scale, &block->found_inf, &block->applies,
                                      options_);
  CUDA_CHECK_LAUNCH();
}

}  // namespace glassbox
