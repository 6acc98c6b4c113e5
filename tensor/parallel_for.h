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

// Elements per work item for elementwise loops: large enough to amortise the
// fork/join, small enough to balance two to a few dozen threads.
inline constexpr int64_t kElementwiseGrain = 1 << 15;

}  // namespace glassbox
