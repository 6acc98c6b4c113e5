// bench/probes/linear_dx_tiles.cpp: a linear layer's backward-data, dx = dy w,
// on oneDNN's sgemm (what Eigen's A B products call, tensor/gemm_onednn.cpp)
// three ways: as Glassbox ran it before (a product per thread, reading w in
// place), the same with w's rows 16 floats further apart (a padded copy made
// before timing: what a stride that is not a multiple of 4 KiB is worth), and
// by tiles of w copied into a padded buffer, a product each (what it chose:
// Note [Weights whose rows alias in the cache], layers/linear/linear.cpp). Shapes:
// FCN-5's, AlexNet's fc6 and fc7, at 32 to 256 rows, and one whose stride is
// no multiple of 4 KiB. Not part of the build:
//
//   g++ -O2 -fopenmp bench/probes/linear_dx_tiles.cpp -o /tmp/linear_dx_tiles -ldnnl
//   OMP_NUM_THREADS=2 /tmp/linear_dx_tiles
//
// Each figure is the median of 11 products after 2 untimed ones, in GFLOP/s;
// every shape twice.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "oneapi/dnnl/dnnl.h"

namespace {

struct Layer {
  int rows, in, out;
};
constexpr Layer kLayers[] = {{32, 4096, 2048}, {64, 4096, 2048}, {128, 4096, 2048}, {256, 4096, 2048},
                             {64, 2048, 1024}, {64, 9216, 4096}, {64, 4096, 4096},  {64, 784, 4096}};
constexpr int kPad = 16;
constexpr int kTileRows = 64, kTileColumns = 1024;

double median_seconds(const std::function<void()>& product) {
  product();
  product();
  std::vector<double> seconds;
  for (int i = 0; i < 11; ++i) {
    const auto start = std::chrono::steady_clock::now();
    product();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[5];
}

// dx (rows x in) = dy (rows x out) w (out x in, row stride ldw), a product per
// thread over blocks of dx's columns, as layers/linear/linear.cpp's blocks run.
void in_place(const Layer& l, const float* dy, const float* w, int ldw, float* dx) {
  const int threads = omp_get_max_threads();
  const int block = ((l.in + threads - 1) / threads + 15) / 16 * 16;
#pragma omp parallel for
  for (int begin = 0; begin < l.in; begin += block) {
    const int end = std::min(l.in, begin + block);
    dnnl_sgemm('N', 'N', l.rows, end - begin, l.out, 1.0f, dy, l.out, w + begin, ldw, 0.0f, dx + begin, l.in);
  }
}

// The same product by tiles of w (kTileRows x kTileColumns) copied into a
// per-thread buffer whose rows are kTileColumns + kPad floats apart.
void by_tiles(const Layer& l, const float* dy, const float* w, float* dx, std::vector<std::vector<float>>& buffers) {
  constexpr int ld = kTileColumns + kPad;
#pragma omp parallel for schedule(static)
  for (int begin = 0; begin < l.in; begin += kTileColumns) {
    const int width = std::min(l.in, begin + kTileColumns) - begin;
    float* buffer = buffers[omp_get_thread_num()].data();
    for (int k0 = 0; k0 < l.out; k0 += kTileRows) {
      const int depth = std::min(l.out, k0 + kTileRows) - k0;
      for (int k = 0; k < depth; ++k) std::memcpy(buffer + k * ld, w + size_t(k0 + k) * l.in + begin, width * 4);
      dnnl_sgemm('N', 'N', l.rows, width, depth, 1.0f, dy + k0, l.out, buffer, ld, k0 == 0 ? 0.0f : 1.0f,
                 dx + begin, l.in);
    }
  }
}

}  // namespace

int main() {
  std::printf("rows x in -> out: dx GFLOP/s in place | w's rows padded (copied untimed) | by tiles\n");
  for (const Layer l : kLayers) {
    std::vector<float> w(size_t(l.out) * l.in, 0.25f), dy(size_t(l.rows) * l.out, 0.1f), dx(size_t(l.rows) * l.in);
    std::vector<float> padded(size_t(l.out) * (l.in + kPad), 0.25f);
    std::vector<std::vector<float>> buffers(omp_get_max_threads(),
                                            std::vector<float>(size_t(kTileRows) * (kTileColumns + kPad)));
    const double flop = 2.0 * l.rows * l.in * l.out;
    for (int round = 0; round < 2; ++round) {
      const double place = median_seconds([&] { in_place(l, dy.data(), w.data(), l.in, dx.data()); });
      const double pad = median_seconds([&] { in_place(l, dy.data(), padded.data(), l.in + kPad, dx.data()); });
      const double tiles = median_seconds([&] { by_tiles(l, dy.data(), w.data(), dx.data(), buffers); });
      std::printf("%5d x %5d -> %5d  %6.1f | %6.1f | %6.1f\n", l.rows, l.in, l.out, flop / place / 1e9,
                  flop / pad / 1e9, flop / tiles / 1e9);
    }
  }
}
