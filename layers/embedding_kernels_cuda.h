// layers/embedding_kernels_cuda.h: the hand-written kernels of the embedding
// (layers/embedding.cu), launched on `stream` and checked after launch.
// tokens:(N) int32 (the positions flattened), weight and dweight:(V,E), y and dy:(N,E).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace glassbox {

// y[p, :] = weight[tokens[p], :]; NaN for a token outside [0, V).
void launch_embedding_gather(const int* tokens, const float* weight, int64_t n, int64_t v, int64_t e, float* y,
                             cudaStream_t stream);

// dweight[tokens[p], :] += dy[p, :] with float atomicAdd: fast, but the order
// of the adds into a shared row varies, so the bits may differ run to run.
// Tokens outside [0, V) add nothing.
void launch_embedding_scatter_add_atomic(const int* tokens, const float* dy, int64_t n, int64_t v, int64_t e,
                                         float* dweight, cudaStream_t stream);

// The same sum with one writer per element of dweight, adding the positions
// in order: the same bits every run, and the CPU path's bits. Tokens outside
// [0, V) add nothing.
void launch_embedding_scatter_add_ordered(const int* tokens, const float* dy, int64_t n, int64_t v, int64_t e,
                                          float* dweight, cudaStream_t stream);

}  // namespace glassbox
