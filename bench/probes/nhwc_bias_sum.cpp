// bench/probes/nhwc_bias_sum.cpp: a convolution's bias gradient (the sum of
// dy per output channel) on VGG16 conv1_1's dy at batch 2, 64 channels x
// 2 x 224 x 224 pixels, in the ways Note [Bias gradient of NHWC outputs]
// (layers/conv2d/conv2d.cpp) compares. Not part of the build.
//
//   g++ -O3 -march=native -fopenmp -I/usr/include/eigen3 bench/probes/nhwc_bias_sum.cpp -o /tmp/nhwc_bias_sum
//   OMP_NUM_THREADS=2 /tmp/nhwc_bias_sum
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

using Lanes = float __attribute__((vector_size(64)));
using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr long kChannels = 64, kPixels = 224 * 224 * 2;

Lanes load(const float* from) {
  Lanes v;
  std::memcpy(&v, from, sizeof v);
  return v;
}

template <typename Body>
void time(const char* name, const Body& body) {
  body();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) body();
  const double ms = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e3 / 20;
  std::printf("%-48s %.3f ms\n", name, ms);
}

}  // namespace

int main() {
  std::vector<float> dy(kChannels * kPixels, 0.5f), db(kChannels, 0.0f), parts(2 * kChannels);
  const float* d = dy.data();
  time("NHWC, each thread its channels, sums in memory", [&] {
#pragma omp parallel
    {
      const long t = omp_get_thread_num(), n = omp_get_num_threads();
      const long begin = kChannels * t / n, end = kChannels * (t + 1) / n;
      Eigen::Map<Eigen::ArrayXf> sums(db.data() + begin, end - begin);
      for (long p = 0; p < kPixels; ++p) sums += Eigen::Map<const Eigen::ArrayXf>(d + p * kChannels + begin, end - begin);
    }
  });
  time("NHWC, Eigen colwise().sum() per pixel share", [&] {
#pragma omp parallel
    {
      const long t = omp_get_thread_num(), n = omp_get_num_threads();
      const long begin = kPixels * t / n, end = kPixels * (t + 1) / n;
      Eigen::Map<Eigen::RowVectorXf>(parts.data() + t * kChannels, kChannels) =
          Eigen::Map<const RowMajor>(d + begin * kChannels, end - begin, kChannels).colwise().sum();
    }
    for (long k = 0; k < kChannels; ++k) db[k] += parts[k] + parts[kChannels + k];
  });
  time("NHWC, per pixel share, sums in registers", [&] {
#pragma omp parallel
    {
      const long t = omp_get_thread_num(), n = omp_get_num_threads();
      const long begin = kPixels * t / n, end = kPixels * (t + 1) / n;
      Lanes acc[kChannels / 16] = {};
      for (long p = begin; p < end; ++p) {
        for (long v = 0; v < kChannels / 16; ++v) acc[v] += load(d + p * kChannels + 16 * v);
      }
      std::memcpy(parts.data() + t * kChannels, acc, sizeof acc);
    }
    for (long k = 0; k < kChannels; ++k) db[k] += parts[k] + parts[kChannels + k];
  });
  time("NCHW planes, a channel each", [&] {
#pragma omp parallel for
    for (long k = 0; k < kChannels; ++k) db[k] += Eigen::Map<const Eigen::ArrayXf>(d + k * kPixels, kPixels).sum();
  });
}
