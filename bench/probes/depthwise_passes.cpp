// bench/probes/depthwise_passes.cpp: the three passes of Glassbox's direct
// depthwise convolution (layers/conv2d/conv2d_depthwise.cpp: 3x3, pad 1, stride 1)
// alone, on one of Xception's shapes, with the data in cache ("hot") and
// after a 256 MiB sweep that evicts it ("cold"). Not part of the build: it
// links the library of a build, so two builds' kernels can be set side by
// side.
//
//   g++ -std=c++20 -O3 -march=native -fopenmp -DGLASSBOX_DETERMINISTIC=0 -DGLASSBOX_WITH_CUDA=0
//       -DGLASSBOX_WITH_ONEDNN=1 -I. -I/usr/include/eigen3 bench/probes/depthwise_passes.cpp
//       build-cpu/libglassbox.a -o /tmp/depthwise_passes          (one command, from the repository)
//   OMP_NUM_THREADS=2 /tmp/depthwise_passes 8 728 19     # images, channels, plane side
//
// Prints, per pass and cache state, the best and mean of 30 calls in ms.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "layers/conv2d/conv2d_depthwise.h"

namespace {

using glassbox::DepthwisePlan;

DepthwisePlan plan_for(int64_t images, int64_t channels, int64_t side) {
  DepthwisePlan pl;
  pl.n = images, pl.c = channels, pl.p = side;
  pl.u = {.h = side, .w = side, .q = side, .r = 3, .s = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 1};
  pl.threads = omp_get_max_threads();
  return pl;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s IMAGES CHANNELS SIDE\n", argv[0]);
    return 2;
  }
  const DepthwisePlan pl = plan_for(std::atoll(argv[1]), std::atoll(argv[2]), std::atoll(argv[3]));
  const auto plane_floats = static_cast<size_t>(pl.n * pl.c * pl.p * pl.p);
  std::vector<float> x(plane_floats, 0.5f), y(plane_floats, 0.25f), w(static_cast<size_t>(pl.c * 9), 0.1f);
  std::vector<float> workspace(static_cast<size_t>(glassbox::depthwise_workspace_floats(pl)));
  std::vector<float> sweep(64 << 20, 1.0f);  // 256 MiB, past any L3
  const char* passes[] = {"forward", "backward-data", "backward-filter"};
  for (int pass = 0; pass < 3; ++pass) {
    for (const bool cold : {false, true}) {
      constexpr int kCalls = 30;
      double best = 1e30, total = 0.0;
      for (int call = 0; call < kCalls; ++call) {
        if (cold) {
          for (size_t i = 0; i < sweep.size(); i += 16) sweep[i] += 1.0f;
        }
        const auto start = std::chrono::steady_clock::now();
        if (pass == 0) glassbox::depthwise_forward(pl, x.data(), w.data(), nullptr, y.data(), workspace.data());
        if (pass == 1) {
          glassbox::depthwise_backward_data(pl, w.data(), y.data(), glassbox::GradMode::kWrite, x.data(),
                                            workspace.data());
        }
        if (pass == 2) glassbox::depthwise_backward_filter(pl, x.data(), y.data(), w.data(), workspace.data());
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        best = std::min(best, ms);
        total += ms;
      }
      std::printf("%-16s %s  %ld x %ld x %ldx%ld, %d threads: best %.3f, mean %.3f ms\n", passes[pass],
                  cold ? "cold" : "hot ", static_cast<long>(pl.n), static_cast<long>(pl.c), static_cast<long>(pl.p),
                  static_cast<long>(pl.p), pl.threads, best, total / kCalls);
    }
  }
  return 0;
}
