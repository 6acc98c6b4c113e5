// layers/softmax_xent_kernels_cuda.h: the hand-written kernels of the softmax
// cross-entropy (layers/softmax_xent.cu), launched on `stream` and checked
// after launch. log_probs:(N,K) from cudnnSoftmaxForward (log mode), labels:(N) int32;
// over leading dimensions, N rows are all the positions ((T,B,K) logits: N = T*B).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace glassbox {

// loss[0] = -1/N * sum_n log_probs[n, labels[n]]: one block, a fixed reduction
// order, so the same inputs give the same bits. NaN if any label is outside [0, K).
void launch_softmax_xent_loss(const float* log_probs, const int* labels, int64_t n, int64_t k, float* loss,
                              cudaStream_t stream);

// dlogits (= or +=, per `accumulate`) (exp(log_probs) - onehot(labels)) / N.
// Rows whose label is outside [0, K) get NaN.
void launch_softmax_xent_grad(const float* log_probs, const int* labels, int64_t n, int64_t k, bool accumulate,
                              float* dlogits, cudaStream_t stream);

}  // namespace glassbox
