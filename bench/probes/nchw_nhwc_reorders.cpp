// bench/probes/nchw_nhwc_reorders.cpp: one image's NCHW <-> NHWC copies, the
// reorders a oneDNN convolution pays around each pass (its brgconv works in
// NHWC, "acdb"), by oneDNN's reorder primitive and by a tiled transpose.
// Measured because VGG16's inference at batch 2 spent 29 ms of its 293 ms
// step in these reorders (ONEDNN_VERBOSE, bench/onednn_verbose_sum.py), at 11 GB/s
// where a copy runs at 22: a plane of 224 x 224 floats is 49 x 4 KiB, so the
// 16 planes a transpose reads at once fall in the same L1 sets.
//
//   g++ -O3 -march=native -fopenmp bench/probes/nchw_nhwc_reorders.cpp -o /tmp/reorders -ldnnl
//   OMP_NUM_THREADS=2 /tmp/reorders
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

double best_ms(const std::function<void()>& call) {
  call();
  double best = 1e30;
  for (int run = 0; run < 5; ++run) {
    int calls = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    do {
      call();
      ++calls;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (elapsed < 0.2);
    best = std::min(best, elapsed * 1e3 / calls);
  }
  return best;
}

// to[p * c + ch] = from[ch * pixels + p], by tiles of kTile channels x kTile
// pixels, the pixels split between the threads.
constexpr int kTile = 16;
void nchw_to_nhwc(const float* from, float* to, int64_t c, int64_t pixels) {
#pragma omp parallel for schedule(static)
  for (int64_t p0 = 0; p0 < pixels; p0 += kTile) {
    const int64_t pn = std::min<int64_t>(kTile, pixels - p0);
    for (int64_t c0 = 0; c0 < c; c0 += kTile) {
      const int64_t cn = std::min<int64_t>(kTile, c - c0);
      for (int64_t p = 0; p < pn; ++p)
        for (int64_t ch = 0; ch < cn; ++ch) to[(p0 + p) * c + c0 + ch] = from[(c0 + ch) * pixels + p0 + p];
    }
  }
}
void nhwc_to_nchw(const float* from, float* to, int64_t c, int64_t pixels) {
#pragma omp parallel for schedule(static)
  for (int64_t p0 = 0; p0 < pixels; p0 += kTile) {
    const int64_t pn = std::min<int64_t>(kTile, pixels - p0);
    for (int64_t c0 = 0; c0 < c; c0 += kTile) {
      const int64_t cn = std::min<int64_t>(kTile, c - c0);
      for (int64_t ch = 0; ch < cn; ++ch)
        for (int64_t p = 0; p < pn; ++p) to[(c0 + ch) * pixels + p0 + p] = from[(p0 + p) * c + c0 + ch];
    }
  }
}

}  // namespace

int main() {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  struct Shape {
    int64_t c, h, w;
  };
  const Shape shapes[] = {{64, 224, 224}, {128, 112, 112}, {64, 112, 112}, {256, 56, 56},
                          {128, 56, 56},  {512, 28, 28},   {256, 28, 28},  {512, 14, 14}};
  std::printf("threads %d; ms per image (GB/s counting one read and one write)\n", omp_get_max_threads());
  std::printf("%-14s %18s %18s %18s %18s\n", "C x H x W", "oneDNN to NHWC", "tiled to NHWC", "oneDNN to NCHW",
              "tiled to NCHW");
  for (const Shape& s : shapes) {
    const int64_t n = s.c * s.h * s.w;
    std::vector<float> nchw(n), nhwc(n), back(n);
    for (int64_t i = 0; i < n; ++i) nchw[i] = static_cast<float>(i % 977);
    const memory::dims dims{1, s.c, s.h, s.w};
    memory a({dims, memory::data_type::f32, Tag::nchw}, engine, nchw.data());
    memory b({dims, memory::data_type::f32, Tag::acdb}, engine, nhwc.data());
    memory c({dims, memory::data_type::f32, Tag::nchw}, engine, back.data());
    dnnl::reorder to_nhwc(a, b), to_nchw(b, c);
    const double gb = 2.0 * n * sizeof(float) / 1e9;
    const double r1 = best_ms([&] { to_nhwc.execute(stream, a, b); });
    const std::vector<float> reference = nhwc;
    const double t1 = best_ms([&] { nchw_to_nhwc(nchw.data(), nhwc.data(), s.c, s.h * s.w); });
    if (nhwc != reference) std::printf("tiled to NHWC differs from oneDNN\n");
    const double r2 = best_ms([&] { to_nchw.execute(stream, b, c); });
    const double t2 = best_ms([&] { nhwc_to_nchw(nhwc.data(), back.data(), s.c, s.h * s.w); });
    if (back != nchw) std::printf("tiled to NCHW does not give the input back\n");
    char name[32];
    std::snprintf(name, sizeof name, "%ldx%ldx%ld", long(s.c), long(s.h), long(s.w));
    auto cell = [&](double ms) { std::printf(" %8.3f (%5.1f GB/s)", ms, gb / ms * 1e3); };
    std::printf("%-14s", name);
    cell(r1), cell(t1), cell(r2), cell(t2);
    std::printf("\n");
  }
}
