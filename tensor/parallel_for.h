// tensor/parallel_for.h: splitting CPU work over OpenMP threads.
//
// Elementwise layers are memory-bound; two threads on two cores roughly double
// their bandwidth. Work items are contiguous ranges, each handed to a body that
// uses Eigen maps (vectorised) on its range. Eigen's own matrix products run
// single-threaded inside a parallel region, which is what the tiled layers
// (convolution) want: parallelism over tiles, not inside each small product.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace glassbox {

// Calls body(begin, end) for consecutive ranges covering [0, count), in
// parallel. Ranges hold at least `grain` items so small tensors stay on one thread.
template <typename Body>
void parallel_for(int64_t count, int64_t grain, const Body& body) {
  const int64_t threads = omp_get_max_threads();
  const int64_t chunks = std::clamp<int64_t>(count / std::max<int64_t>(grain, 1), 1, threads * 4);
  if (chunks == 1) {
    body(int64_t{0}, count);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    body(count * chunk / chunks, count * (chunk + 1) / chunks);
  }
}

// Note [One block, no team]: Debian's OpenMP build of OpenBLAS, under Eigen's
// products, threads a product itself unless omp_in_parallel(), and a team of
// one thread (`#pragma omp parallel if (false)`) is not an active region: from
// inside it OpenBLAS opened a nested team, and libgomp starts the threads of a
// nested team afresh on every call. LeNet's fc4 backward-data at batch 256, a
// 256x84 by 84x120 product in a single block, took 3.3-3.9 ms, and the step
// 11.4-11.6 ms (`glassbox time LeNet --batch 256`, 2-core Xeon). So a single
// block runs on the calling thread, outside any team, where OpenBLAS uses
// OpenMP's own pool: the same block there took 0.050-0.064 ms, the step 9.2.
// (At that size the product now takes two blocks, Note [Blocks of a product
// over the threads] below: 0.04 ms, the step 7.5.)
//
// Calls body(begin, end) for consecutive blocks of `block` items covering
// [0, count), a block per work item, statically over the threads.
template <typename Body>
void for_each_block(int64_t count, int64_t block, const Body& body) {
  const int64_t blocks = (count + block - 1) / block;
  if (blocks <= 1) {
    body(int64_t{0}, count);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) body(b * block, std::min(count, (b + 1) * block));
}

// Note [Blocks of a product over the threads]: a product split into blocks of
// its output, a GEMM each, packs the whole of its other operand again for
// every block. Where the product is a few rows against large weights, reading
// the weights is its cost and small blocks stream them best (Note [Blocked
// linear products] in layers/linear.cpp); from kComputeBoundRows rows on, the
// packing dominates: LSTMLarge's decoder at batch 80 (2800 rows of 1500
// against 10000 outputs) packed its 16.8 MB input for each of 157 blocks of
// 64 outputs, 214 GFLOP/s; one block per thread packs it once a thread, 326
// GFLOP/s, forward 392 -> 255 ms (`glassbox time LSTMLarge --batch 80`,
// 2-core Xeon). At 16 rows (AlexNet's fc6 to fc8 at batch 16) one block a
// thread measured even or faster in all three passes; at 8 (VGG16's fc6 at
// batch 8) its weight gradient was 7-26% slower, so 8 keeps the small blocks.
inline constexpr int64_t kComputeBoundRows = 16;

// Items per block for a product of `rows` rows over `count` outputs:
// `streaming_block` below kComputeBoundRows, else an even share per thread
// (a multiple of 16 floats).
inline int64_t product_block(int64_t count, int64_t rows, int64_t streaming_block) {
  if (rows < kComputeBoundRows) return streaming_block;
  const int64_t threads = std::max(1, omp_get_max_threads());
  return std::max<int64_t>(16, ((count + threads - 1) / threads + 15) / 16 * 16);
}

// Elements per work item for elementwise loops: large enough to amortise the
// fork/join, small enough to balance two to a few dozen threads.
inline constexpr int64_t kElementwiseGrain = 1 << 15;

}  // namespace glassbox
