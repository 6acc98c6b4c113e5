// layers/embedding.cu: the gather and the scatter-add of the embedding, where
// no cuDNN/cuBLAS call fits (cuBLAS has no row gather; a one-hot GEMM would
// read the whole table for every position).
#include <math_constants.h>

#include <algorithm>

#include "layers/embedding_kernels_cuda.h"
#include "tensor/checks_cuda.h"

namespace glassbox {
namespace {

constexpr int kRowThreads = 128;          // threads across one row of E floats
constexpr int64_t kMaxGridRows = 65535 * 32;
constexpr int kColumnThreads = 128;       // the ordered kernel: one column per thread
constexpr int64_t kOrderedThreads = 1 << 16;  // enough threads to fill the GPU, not so many that each rescans much
constexpr int64_t kMaxSlices = 65535;     // gridDim.y's limit

// One block per position (grid-stride over positions), threads across the E columns.
__global__ void embedding_gather_kernel(const int* tokens, const float* weight, int64_t n, int64_t v, int64_t e,
                                        float* y) {
  for (int64_t p = blockIdx.x; p < n; p += gridDim.x) {
    const int token = tokens[p];
    const bool valid = token >= 0 && token < v;
    const float* row = weight + (valid ? static_cast<int64_t>(token) * e : 0);
    float* out = y + p * e;
    for (int64_t col = threadIdx.x; col < e; col += blockDim.x) out[col] = valid ? row[col] : CUDART_NAN_F;
  }
}

__global__ void embedding_scatter_add_atomic_kernel(const int* tokens, const float* dy, int64_t n, int64_t v,
                                                    int64_t e, float* dweight) {
  for (int64_t p = blockIdx.x; p < n; p += gridDim.x) {
    const int token = tokens[p];
    if (token < 0 || token >= v) continue;  // the forward made this row NaN already
    float* row = dweight + static_cast<int64_t>(token) * e;
    const float* grad = dy + p * e;
    for (int64_t col = threadIdx.x; col < e; col += blockDim.x) atomicAdd(row + col, grad[col]);
  }
}

// Thread (column c, slice s) owns dweight[r, c] for the vocabulary rows r of
// slice s and adds dy[p, c] for every position p whose token is such a row,
// in the order of p. Every thread reads every token (the same address across
// a warp: one broadcast load).
__global__ void embedding_scatter_add_ordered_kernel(const int* tokens, const float* dy, int64_t n, int64_t v,
                                                     int64_t e, int64_t rows_per_slice, float* dweight) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= e) return;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * rows_per_slice;
  const int64_t last = min(first + rows_per_slice, v);
  for (int64_t p = 0; p < n; ++p) {
    const int64_t token = tokens[p];
    if (token >= first && token < last) dweight[token * e + col] += dy[p * e + col];
  }
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
unsigned row_blocks(int64_t n) { return static_cast<unsigned>(std::min(n, kMaxGridRows)); }

}  // namespace

void launch_embedding_gather(const int* tokens, const float* weight, int64_t n, int64_t v, int64_t e, float* y,
                             cudaStream_t stream) {
  if (n == 0) return;  // no tokens; a grid of no blocks is an invalid launch
  embedding_gather_kernel<<<row_blocks(n), kRowThreads, 0, stream>>>(tokens, weight, n, v, e, y);
  CUDA_CHECK_LAUNCH();
}

void launch_embedding_scatter_add_atomic(const int* tokens, const float* dy, int64_t n, int64_t v, int64_t e,
                                         float* dweight, cudaStream_t stream) {
  if (n == 0) return;  // no tokens; a grid of no blocks is an invalid launch
  embedding_scatter_add_atomic_kernel<<<row_blocks(n), kRowThreads, 0, stream>>>(tokens, dy, n, v, e, dweight);
  CUDA_CHECK_LAUNCH();
}

void launch_embedding_scatter_add_ordered(const int* tokens, const float* dy, int64_t n, int64_t v, int64_t e,
                                          float* dweight, cudaStream_t stream) {
  if (n == 0) return;  // no tokens; a grid of no blocks is an invalid launch
  const int64_t column_blocks = ceil_div(e, kColumnThreads);
  const int64_t wanted_slices =
      std::clamp<int64_t>(ceil_div(kOrderedThreads, column_blocks * kColumnThreads), 1, std::min(v, kMaxSlices));
  const int64_t rows_per_slice = ceil_div(v, wanted_slices);
  const int64_t slices = ceil_div(v, rows_per_slice);  // at most wanted_slices
  const dim3 grid(static_cast<unsigned>(column_blocks), static_cast<unsigned>(slices));
  embedding_scatter_add_ordered_kernel<<<grid, kColumnThreads, 0, stream>>>(tokens, dy, n, v, e, rows_per_slice,
                                                                            dweight);
  CUDA_CHECK_LAUNCH();
}

}  // namespace glassbox
