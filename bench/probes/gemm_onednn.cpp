// bench/probes/gemm_onednn.cpp: one float32 product on all the threads,
// OpenBLAS's cblas_sgemm against oneDNN's dnnl_sgemm (Debian's libdnnl 2.6,
// the library behind Glassbox's CPU convolutions), at 2048^3, FCN-5's products
// at batch 256, LSTMLarge's decoder at batch 80 and AlexNet's fc6 at batch 64;
// C = A B^T, row-major, A (m, k), B (n, k), as a linear layer's forward.
// bench/probes/torch_matmul.py times torch.matmul on the same shapes. Not part
// of the build: it measured whether oneDNN's GEMM would close the gap to
// PyTorch's (MKL) on a 2-core Xeon (it did not).
//
//   g++ -O2 -fopenmp -I/usr/include/x86_64-linux-gnu/openblas-openmp bench/probes/gemm_onednn.cpp \
//       -o /tmp/gemm_onednn -L/usr/lib/x86_64-linux-gnu/openblas-openmp \
//       -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -ldnnl
//   OMP_NUM_THREADS=2 /tmp/gemm_onednn
//
// Each figure is the median of 9 products after 2 untimed ones, twice per library.
#include <cblas.h>
#include <dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

struct Shape {
  int m, k, n;
};
constexpr Shape kShapes[] = {{2048, 2048, 2048}, {256, 784, 4096}, {256, 4096, 2048},
                             {256, 2048, 1024},  {2800, 1500, 10000}, {64, 9216, 4096}};

}  // namespace

int main() {
  for (const Shape s : kShapes) {
    std::vector<float> a(static_cast<size_t>(s.m) * s.k, 0.5f), b(static_cast<size_t>(s.n) * s.k, 0.25f);
    std::vector<float> c(static_cast<size_t>(s.m) * s.n);
    for (const bool onednn : {false, true}) {
      auto product = [&] {
        if (onednn) {
          dnnl_sgemm('N', 'T', s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.k, 0.0f, c.data(), s.n);
        } else {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.k,
                      0.0f, c.data(), s.n);
        }
      };
      for (int round = 0; round < 2; ++round) {
        product();
        product();
        std::vector<double> seconds;
        for (int i = 0; i < 9; ++i) {
          const auto start = std::chrono::steady_clock::now();
          product();
          seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
        std::sort(seconds.begin(), seconds.end());
        std::printf("%-8s %5d x %5d x %5d  %8.3f ms  %6.1f GFLOP/s\n", onednn ? "oneDNN" : "OpenBLAS", s.m, s.k, s.n,
                    seconds[4] * 1e3, 2.0 * s.m * s.k * s.n / seconds[4] / 1e9);
      }
    }
  }
}
