// bench/probes/gemm_libraries.cpp: Eigen's single-threaded GEMM against a BLAS
// library's (OpenBLAS or BLIS) on the product shapes of Glassbox's CPU
// convolutions: one product per thread, as Conv2d runs them (each OpenMP
// thread multiplies its own tile, single-threaded). Not part of the build: it
// measures whether replacing Eigen's GEMM is worth doing (a "measured
// reason"), so it links a library the project does not install.
//
//   apt-get install libopenblas-openmp-dev libblis-openmp-dev
//   g++ -O3 -march=native -fopenmp -I/usr/include/eigen3 bench/probes/gemm_libraries.cpp \
//       /usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so -o /tmp/gemm_blis   # or openblas-openmp/libopenblas.so
//   /tmp/gemm_blis
//
// Both libraries run single-threaded here: BLIS by default, OpenBLAS because
// it is called inside an OpenMP parallel region.
#include <omp.h>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                       const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
                       const float* beta, float* c, const int* ldc);

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// (M, K, N): the weights' rows, the unfolded rows (C*R*S), a tile of output pixels.
struct Shape {
  int m, k, n;
};
constexpr Shape kShapes[] = {
    {64, 576, 512},   {128, 1152, 512}, {256, 2304, 512},  // ResNet 3x3 convolutions, 512-pixel tiles
    {512, 4608, 392},                                       // layer4's 3x3 at batch 8 (7x7 images)
    {1024, 256, 512}, {256, 1024, 512}, {64, 64, 512},      // 1x1 convolutions
};

double gflops(const Shape& s, int threads, bool blas) {
  std::vector<RowMatrix> a(threads, RowMatrix::Random(s.m, s.k));
  std::vector<RowMatrix> b(threads, RowMatrix::Random(s.k, s.n));
  std::vector<RowMatrix> c(threads, RowMatrix::Zero(s.m, s.n));
  const double flop = 2.0 * s.m * s.k * s.n;
  const int reps = std::max(4, static_cast<int>(2e10 / flop));
  const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    for (int r = 0; r < reps; ++r) {
      if (!blas) {
        c[t].noalias() = a[t] * b[t];
      } else {
        // Row-major C = A * B is column-major C^T = B^T * A^T.
        const float one = 1.0f, zero = 0.0f;
        sgemm_("N", "N", &s.n, &s.m, &s.k, &one, b[t].data(), &s.n, a[t].data(), &s.k, &zero, c[t].data(), &s.n);
      }
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return flop * reps * threads / seconds / 1e9;
}

}  // namespace

int main() {
  const int threads = omp_get_max_threads();
  std::printf("%d threads, one single-threaded product each; GFLOP/s over all threads\n", threads);
  std::printf("%6s %6s %6s %8s %8s %6s\n", "M", "K", "N", "Eigen", "BLAS", "ratio");
  for (const Shape& s : kShapes) {
    const double eigen = gflops(s, threads, false), blas = gflops(s, threads, true);
    std::printf("%6d %6d %6d %8.1f %8.1f %6.2f\n", s.m, s.k, s.n, eigen, blas, blas / eigen);
  }
}
