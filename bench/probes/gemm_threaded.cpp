// bench/probes/gemm_threaded.cpp: one large float32 product on all the
// threads, Eigen's GEMM against OpenBLAS's cblas_sgemm, at 2048^3 and at the
// products of the LSTM language model (issue 10: T x B = 700 rows, H = 650,
// 4H = 2600 gates, V = 10,000 words) and of one LSTM step (B = 20 rows).
// bench/probes/torch_matmul.py times torch.matmul on the same shapes. Not part
// of the build: it measured whether routing Eigen to a BLAS library was worth
// doing (issue 11; it was: cmake/CpuBlas.cmake), and links cblas directly.
//
//   apt-get install libopenblas-dev
//   g++ -O3 -march=native -fopenmp -I/usr/include/eigen3 bench/probes/gemm_threaded.cpp -o /tmp/gemm -lopenblas
//   /tmp/gemm [threads]    (default 2)
//
// Built as Glassbox builds it (cmake/CpuBlas.cmake: EIGEN_USE_BLAS, Debian's
// OpenMP OpenBLAS), the "eigen" column is Eigen's product on OpenBLAS, the
// path every CPU layer takes:
//   g++ -O3 -march=native -fopenmp -DEIGEN_USE_BLAS -I/usr/include/eigen3 \
//       -I/usr/include/x86_64-linux-gnu/openblas-openmp bench/probes/gemm_threaded.cpp -o /tmp/gemm_blas \
//       -L/usr/lib/x86_64-linux-gnu/openblas-openmp -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas
//
// The last rows are the convolutions' products, one image's im2col as one
// product (K filters x P*Q pixels x C*R*S): ResNet-50's 7x7 stem, 3x3 layers
// of each stage and a 1x1 expansion, and three of VGG16's layers.
//
// Each figure is the best of 5 runs of at least 0.5 s each (a product
// repeated), C = A B, row-major, A (m, k), B (k, n).
#include <cblas.h>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <typename Product>
double best_gflops(long m, long n, long k, const Product& product) {
  product();  // warm-up: first touch, thread start-up
  double best = 0.0;
  for (int run = 0; run < 5; ++run) {
    int repeats = 0;
    double seconds = 0.0;
    const auto start = std::chrono::steady_clock::now();
    do {
      product();
      ++repeats;
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (seconds < 0.5);
    best = std::max(best, 2.0 * static_cast<double>(m * n * k) * repeats / seconds / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  Eigen::setNbThreads(threads);
  openblas_set_num_threads(threads);
  const long shapes[][3] = {{2048, 2048, 2048},   // the SGEMM yardstick
                            {700, 2600, 650},     // an LSTM layer's input projection, 35 x 20 tokens
                            {700, 10000, 650},    // the decoder's forward
                            {700, 650, 10000},    // the decoder's backward-data
                            {20, 2600, 650},      // one recurrent step
                            {64, 12544, 147},     // ResNet-50 conv1, 7x7 s2
                            {64, 3136, 576},      // ResNet-50 layer1 3x3
                            {128, 784, 1152},     // ResNet-50 layer2 3x3
                            {256, 196, 2304},     // ResNet-50 layer3 3x3
                            {512, 49, 4608},      // ResNet-50 layer4 3x3
                            {256, 3136, 64},      // ResNet-50 layer1 1x1 expansion
                            {64, 50176, 576},     // VGG16 conv1_2
                            {256, 3136, 2304},    // VGG16 conv3_2
                            {512, 196, 4608}};    // VGG16 conv5_2
  std::printf("%d threads; GFLOP/s, best of 5\n", threads);
  for (const auto& s : shapes) {
    const long m = s[0], n = s[1], k = s[2];
    const Matrix a = Matrix::Random(m, k), b = Matrix::Random(k, n);
    Matrix c(m, n);
    const double eigen = best_gflops(m, n, k, [&] { c.noalias() = a * b; });
    const double blas = best_gflops(m, n, k, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                  static_cast<int>(k), 1.0f, a.data(), static_cast<int>(k), b.data(), static_cast<int>(n), 0.0f,
                  c.data(), static_cast<int>(n));
    });
    std::printf("%5ld x %5ld x %5ld  eigen %6.1f  openblas %6.1f\n", m, n, k, eigen, blas);
  }
  return 0;
}
