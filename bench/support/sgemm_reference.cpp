// bench/support/sgemm_reference.cpp: a large SGEMM through Eigen's product,
// on the build's kernels (cmake/CpuBlas.cmake), timed by the host clock, on
// every OpenMP thread. Glassbox's layers keep Eigen on one thread (Note
// [Eigen's own threads] in tensor/eigen_maps.h); this yardstick gives Eigen's
// own kernels every thread while it runs, and OpenBLAS's SGEMM, called
// outside any parallel region, takes every OpenMP thread by itself.
#include "bench/support/sgemm_reference.h"

#include <omp.h>

#include <Eigen/Core>
#include <chrono>

#include "tensor/product.h"

namespace glassbox::bench {

void sgemm_eigen(benchmark::State& state, int n) {
  struct EigenThreads {  // every OpenMP thread for this benchmark, then back
    int before = Eigen::nbThreads();
    EigenThreads() { Eigen::setNbThreads(omp_get_max_threads()); }
    ~EigenThreads() { Eigen::setNbThreads(before); }
  } threads;
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::srand(7);  // Eigen's Random() draws from rand()
  const Matrix a = Matrix::Random(n, n), b = Matrix::Random(n, n);
  Matrix c(n, n);
  product_into(c, a, b);  // warm-up: first-touch of c, thread start-up
  double seconds = 0.0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    product_into(c, a, b);  // as the layers call it (Note [Products without Eigen's zeroing pass])
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    benchmark::DoNotOptimize(c.data());
    state.SetIterationTime(elapsed);
    seconds += elapsed;
  }
  const double flops = 2.0 * n * n * static_cast<double>(n) * static_cast<double>(state.iterations());
  state.counters["TFLOP/s"] = flops / seconds / 1e12;
}

}  // namespace glassbox::bench
