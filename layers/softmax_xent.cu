// layers/softmax_xent.cu: the label gather, the mean and the gradient of the
// softmax cross-entropy, where no cuDNN/cuBLAS call fits.
#include <math_constants.h>

#include "layers/softmax_xent_kernels_cuda.h"
#include "tensor/checks_cuda.h"

namespace glassbox {
namespace {

constexpr int kLossThreads = 512;  // one block: N is a batch size, or T*B positions (thousands)
constexpr int kGradThreads = 256;  // per row; rows are K wide
constexpr int kMaxGridRows = 65535 * 32;

__global__ void softmax_xent_loss_kernel(const float* log_probs, const int* labels, int64_t n, int64_t k,
                                         float* loss) {
  __shared__ double partial[kLossThreads];
  double sum = 0.0;
  int bad = 0;
  for (int64_t row = threadIdx.x; row < n; row += blockDim.x) {
    const int label = labels[row];
    if (label < 0 || label >= k) {
      bad = 1;
    } else {
      sum += static_cast<double>(log_probs[row * k + label]);
    }
  }
  partial[threadIdx.x] = sum;
  const int any_bad = __syncthreads_or(bad);  // also the barrier before the reduction
  // Tree reduction in a fixed order: deterministic.
  for (int stride = kLossThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    loss[0] = any_bad ? CUDART_NAN_F : static_cast<float>(-partial[0] / static_cast<double>(n));
  }
}

// One block per row (grid-stride over rows), threads across the K classes.
__global__ void softmax_xent_grad_kernel(const float* log_probs, const int* labels, int64_t n, int64_t k,
                                         float inv_n, bool accumulate, float* dlogits) {
  for (int64_t row = blockIdx.x; row < n; row += gridDim.x) {
    const int label = labels[row];
    const bool valid = label >= 0 && label < k;
    const float* logp = log_probs + row * k;
    float* grad = dlogits + row * k;
    for (int64_t col = threadIdx.x; col < k; col += blockDim.x) {
      float g = CUDART_NAN_F;
      if (valid) g = (expf(logp[col]) - (col == label ? 1.0f : 0.0f)) * inv_n;
      grad[col] = accumulate ? grad[col] + g : g;
    }
  }
}

}  // namespace

void launch_softmax_xent_loss(const float* log_probs, const int* labels, int64_t n, int64_t k, float* loss,
                              cudaStream_t stream) {
  softmax_xent_loss_kernel<<<1, kLossThreads, 0, stream>>>(log_probs, labels, n, k, loss);
  CUDA_CHECK_LAUNCH();
}

void launch_softmax_xent_grad(const float* log_probs, const int* labels, int64_t n, int64_t k, bool accumulate,
                              float* dlogits, cudaStream_t stream) {
  if (n == 0) return;  // no rows, no gradient; a grid of no blocks is an invalid launch
  const auto blocks = static_cast<unsigned>(n < kMaxGridRows ? n : kMaxGridRows);
  const float inv_n = 1.0f / static_cast<float>(n);
  softmax_xent_grad_kernel<<<blocks, kGradThreads, 0, stream>>>(log_probs, labels, n, k, inv_n, accumulate,
                                                                 dlogits);
  CUDA_CHECK_LAUNCH();
}

}  // namespace glassbox
