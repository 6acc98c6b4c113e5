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
// one thread (`#pragma omp parallel if (false)`) is not an active region:
// from inside it OpenBLAS opens a nested team, and libgomp starts the threads
// of a nested team afresh on every call, which costs far more than a small
// product (LeNet's fc4 backward-data at batch 256: dozens of times its
// time). So a single block runs on the calling thread, outside any team,
// where OpenBLAS uses OpenMP's own pool.
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
// linear products] in layers/linear/linear.cpp); from kComputeBoundRows rows on, the
// packing dominates (LSTMLarge's decoder at batch 80 would pack its 16.8 MB
// input for each of 157 blocks of 64 outputs), and one block per thread,
// which packs it once a thread, is about 1.5x as fast. At 16 rows one block a
// thread is even or faster in all three passes; at 8 its weight gradient is
// slower, so below 16 rows the blocks stay small.
inline constexpr int64_t kComputeBoundRows = 16;

// Items per block for a product of `rows` rows over `count` outputs:
// `streaming_block` below kComputeBoundRows, else an even share per thread
// (a multiple of 16 floats).
inline int64_t product_block(int64_t count, int64_t rows, int64_t streaming_block) {
  if (rows < kComputeBoundRows) return streaming_block;
  const int64_t threads = std::max(1, omp_get_max_threads());
  return std::max<int64_t>(16, ((count + threads - 1) / threads + 15) / 16 * 16);
}

// Note [Whole OpenMP teams]: oneDNN splits a call's work for the team it
// asks for and waits for every share at barriers of its own. With
// OMP_DYNAMIC=true, libgomp may give a parallel region fewer threads than
// asked (it subtracts the load average from the cores), and oneDNN's
// convolution backward-weights then spins at its barrier for a thread that
// never comes: `glassbox time LeNet` with OMP_DYNAMIC=true did not finish a
// step in a minute. So every context turns dynamic adjustment off, for the
// thread that makes it, whatever the environment says.
inline void keep_openmp_teams_whole() { omp_set_dynamic(0); }

// Elements per work item for elementwise loops: large enough to amortise the
// fork/join, small enough to balance two to a few dozen threads.
inline constexpr int64_t kElementwiseGrain = 1 << 15;

}  // namespace glassbox
