// bench/probes/streamed_dx_blocks.cpp: a linear layer's backward-data at up
// to 16 rows, dx = dy w, streamed as layers/linear/streamed_product.cpp does (four
// weight rows at a time into sums that stay in cache), with column blocks of
// 384 (the old width: sums in L1), 1024, 2048 and a thread's share of the
// columns, over the threads as layers/linear/linear.cpp splits them. Shapes: VGG's
// fc6 (25088 -> 4096), AlexNet's fc6 (9216 -> 4096), fc7 (4096 -> 4096) and
// fc8 (4096 -> 1000). It chose Note [Streamed backward-data by wide blocks]
// (layers/linear/linear.cpp). Not part of the build:
//
//   g++ -O3 -march=native -fopenmp -I/usr/include/eigen3 -DNDEBUG bench/probes/streamed_dx_blocks.cpp -o /tmp/sdx
//   (then OMP_NUM_THREADS=2 /tmp/sdx)
//
// Each figure is the median of 9 passes after 2 untimed ones, in ms.
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

namespace {

using Segment = Eigen::Map<Eigen::ArrayXf>;
using ConstSegment = Eigen::Map<const Eigen::ArrayXf>;

double median_seconds(const std::function<void()>& pass) {
  pass();
  pass();
  std::vector<double> seconds;
  for (int i = 0; i < 9; ++i) {
    const auto start = std::chrono::steady_clock::now();
    pass();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[4];
}

// dx's columns [begin, end) for n rows: sums in `sums` (n rows, ld apart),
// four weight rows at a time, then copied to dx.
void streamed_block(int64_t n, const float* dy, int64_t out, const float* w, int64_t in, int64_t begin, int64_t end,
                    float* dx, float* sums, int64_t ld) {
  const int64_t width = end - begin;
  for (int64_t r = 0; r < n; ++r) Segment(sums + r * ld, width).setZero();
  for (int64_t o = 0; o + 4 <= out; o += 4) {
    const ConstSegment w0(w + o * in + begin, width), w1(w + (o + 1) * in + begin, width);
    const ConstSegment w2(w + (o + 2) * in + begin, width), w3(w + (o + 3) * in + begin, width);
    for (int64_t r = 0; r < n; ++r) {
      const float* d = dy + r * out + o;
      Segment(sums + r * ld, width) += d[0] * w0 + d[1] * w1 + d[2] * w2 + d[3] * w3;
    }
  }
  for (int64_t r = 0; r < n; ++r) Segment(dx + r * in + begin, width) = Segment(sums + r * ld, width);
}

}  // namespace

int main() {
  struct Layer {
    int64_t in, out;
  };
  const Layer layers[] = {{25088, 4096}, {9216, 4096}, {4096, 4096}, {4096, 1000}};
  const int threads = omp_get_max_threads();
  for (const Layer l : layers) {
    std::vector<float> w(size_t(l.in) * l.out, 0.01f);
    for (const int64_t n : {1, 2, 4, 8, 16}) {
      std::vector<float> dy(n * l.out, 0.1f), dx(n * l.in);
      std::printf("%ld->%ld n=%ld:", l.in, l.out, n);
      for (const int64_t width : {int64_t{384}, int64_t{1024}, int64_t{2048}, (l.in + threads - 1) / threads}) {
        std::vector<std::vector<float>> sums(threads, std::vector<float>(n * width));
        const double seconds = median_seconds([&] {
#pragma omp parallel for schedule(static)
          for (int64_t begin = 0; begin < l.in; begin += width) {
            streamed_block(n, dy.data(), l.out, w.data(), l.in, begin, std::min(l.in, begin + width), dx.data(),
                           sums[omp_get_thread_num()].data(), width);
          }
        });
        std::printf("  w%ld %.2f ms", width, seconds * 1e3);
      }
      std::printf("\n");
    }
  }
}
