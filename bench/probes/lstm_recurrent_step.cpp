// bench/probes/lstm_recurrent_step.cpp: the LSTM forward's recurrent products,
// a_t += h_{t-1} W_hh^T for T steps of B rows against W_hh (4H x H), on all
// the threads, three ways:
//   streamed  Glassbox's streamed_forward (layers/linear/streamed_product.cpp) over
//             blocks of hidden units, four gate rows each, as lstm_cpu.cpp
//             ran it until this probe where W_hh is over 2 MiB and B <= 16
//   sgemm     oneDNN's sgemm over the same blocks, as Eigen's products (on
//             oneDNN's sgemm) ran it everywhere else
//   ba        oneDNN's matmul on W_hh as it is (the transposed "ba" layout),
//             a sum post-op adding into a_t: one call per step
//   blocked   the same with W_hh reordered into oneDNN's own layout once per
//             sequence (the reorder is timed with the steps)
// It chose Note [The recurrent step on oneDNN's matmul] (layers/lstm/lstm_cpu.cpp).
// Not part of the build:
//
//   g++ -std=c++20 -O2 -march=native -fopenmp -DGLASSBOX_DETERMINISTIC=0 -I. -I/usr/include/eigen3 \
//       bench/probes/lstm_recurrent_step.cpp \
//       layers/linear/streamed_product.cpp -o /tmp/lstm_step -ldnnl
//   OMP_NUM_THREADS=2 /tmp/lstm_step
//
// And the backward's, dh += da_{t+1} W_hh (B x 4H times 4H x H), three ways:
//   sgemm     oneDNN's sgemm over blocks of hidden units, one per thread, as
//             Eigen's product (on oneDNN's sgemm) runs it in lstm_cpu.cpp
//   ab        oneDNN's matmul on W_hh as it is, a sum post-op, one call per step
//   blocked   the same with W_hh reordered once per sequence
// Each figure is the median of 7 sequences after 2 untimed ones, in GFLOP/s
// of the recurrent products; the three ways alternated, every shape twice.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "layers/linear/streamed_product.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

struct Shape {
  int steps, batch, hidden;
};
// LSTMSmall, LSTM and LSTMLarge at their benchmark batches.
constexpr Shape kShapes[] = {{20, 10, 200}, {20, 40, 200}, {35, 5, 650},  {35, 10, 650},
                             {35, 20, 650}, {35, 40, 650}, {35, 10, 1500}, {35, 20, 1500}, {35, 80, 1500}};

double median_seconds(const std::function<void()>& run) {
  std::vector<double> times;
  for (int i = 0; i < 9; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i >= 2) times.push_back(s);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct Case {
  Shape s;
  std::vector<float> h, w, a;
  Case(Shape shape)
      : s(shape),
        h(static_cast<size_t>(shape.steps) * shape.batch * shape.hidden),
        w(static_cast<size_t>(4) * shape.hidden * shape.hidden),
        a(static_cast<size_t>(shape.steps) * shape.batch * 4 * shape.hidden) {
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(i % 7) * 0.01f;
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 5) * 0.01f;
  }
  const float* h_at(int t) const { return h.data() + static_cast<size_t>(t) * s.batch * s.hidden; }
  float* a_at(int t) { return a.data() + static_cast<size_t>(t) * s.batch * 4 * s.hidden; }
};

// Hidden units per block: an even share per thread in multiples of 16, as lstm_cpu.cpp splits a step.
int64_t units_per_block(int64_t hidden) {
  const int threads = omp_get_max_threads();
  const int64_t share = (hidden + threads - 1) / threads;
  return std::max<int64_t>(16, (share + 15) / 16 * 16);
}

void run_streamed(Case& c) {
  const int64_t H = c.s.hidden, G = 4 * H, B = c.s.batch;
  const int64_t block = units_per_block(H), blocks = (H + block - 1) / block;
  for (int t = 0; t < c.s.steps; ++t) {
    const float* hp = c.h_at(t);
    float* at = c.a_at(t);
    for (int64_t r0 = 0; r0 < B; r0 += glassbox::kMaxStreamedBatch) {
      const int64_t n = std::min<int64_t>(glassbox::kMaxStreamedBatch, B - r0);
#pragma omp parallel for schedule(static)
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t j0 = b * block, j1 = std::min(H, j0 + block);
        for (int64_t k = 0; k < 4; ++k) {
          glassbox::streamed_forward(n, hp + r0 * H, H, c.w.data(), k * H + j0, k * H + j1, at + r0 * G, G,
                                     glassbox::GradMode::kAdd);
        }
      }
    }
  }
}

// The same for the forward: per block and gate, a[:, kH+j0 : kH+j0+n] += h W[kH+j0 : .., :]^T.
void run_sgemm_forward(Case& c) {
  const int64_t H = c.s.hidden, G = 4 * H, B = c.s.batch;
  const int64_t block = units_per_block(H), blocks = (H + block - 1) / block;
  for (int t = 0; t < c.s.steps; ++t) {
    const float* hp = c.h_at(t);
    float* at = c.a_at(t);
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t j0 = b * block, n = std::min(H, j0 + block) - j0;
      for (int64_t k = 0; k < 4; ++k) {
        dnnl_sgemm('N', 'T', B, n, H, 1.0f, hp, H, c.w.data() + (k * H + j0) * H, H, 1.0f, at + k * H + j0, G);
      }
    }
  }
}

struct OneDnnStep {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul matmul;
  dnnl::reorder reorder;
  memory user_w, w, src, dst, scratchpad;
  std::vector<char> scratch, blocked;
  bool reordered;
  bool backward;
  OneDnnStep(const Shape& s, bool blocked_weights, bool backward_data = false)
      : reordered(blocked_weights), backward(backward_data) {
    const memory::dim B = s.batch, H = s.hidden, G = 4 * s.hidden;
    const memory::dim K = backward ? G : H, N = backward ? H : G;
    const Tag user_tag = backward ? Tag::ab : Tag::ba;
    const memory::desc src_md({B, K}, memory::data_type::f32, Tag::ab), dst_md({B, N}, memory::data_type::f32, Tag::ab);
    const memory::desc user_md({K, N}, memory::data_type::f32, user_tag);
    const memory::desc w_md({K, N}, memory::data_type::f32, blocked_weights ? Tag::any : user_tag);
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, w_md, dst_md), attr, engine);
    std::printf("    %s %s: %s, weights %zu bytes, scratchpad %zu\n", backward ? "backward" : "forward",
                blocked_weights ? "blocked" : (backward ? "ab" : "ba"),
                pd.impl_info_str(), pd.weights_desc().get_size(), pd.scratchpad_desc().get_size());
    matmul = dnnl::matmul(pd);
    scratch.resize(pd.scratchpad_desc().get_size() + 64);
    blocked.resize(pd.weights_desc().get_size());
    user_w = memory(user_md, engine, DNNL_MEMORY_NONE);
    w = memory(pd.weights_desc(), engine, blocked_weights ? blocked.data() : DNNL_MEMORY_NONE);
    src = memory(src_md, engine, DNNL_MEMORY_NONE);
    dst = memory(dst_md, engine, DNNL_MEMORY_NONE);
    scratchpad = memory(pd.scratchpad_desc(), engine, scratch.data());
    if (blocked_weights) reorder = dnnl::reorder(user_w, w);
  }
  void run(Case& c) {
    user_w.set_data_handle(c.w.data());
    if (reordered) {
      reorder.execute(stream, user_w, w);
    } else {
      w.set_data_handle(c.w.data());
    }
    for (int t = 0; t < c.s.steps; ++t) {
      src.set_data_handle(backward ? c.a_at(t) : const_cast<float*>(c.h_at(t)));
      dst.set_data_handle(backward ? const_cast<float*>(c.h_at(t)) : c.a_at(t));
      matmul.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst},
                              {DNNL_ARG_SCRATCHPAD, scratchpad}});
    }
    stream.wait();
  }
};

// dh += da W_hh over blocks of hidden units, oneDNN's sgemm on each, as
// lstm_cpu.cpp's Eigen products run (Eigen's products on oneDNN's sgemm, one
// thread each inside the parallel region).
void run_sgemm_backward(Case& c) {
  const int64_t H = c.s.hidden, G = 4 * H, B = c.s.batch;
  const int64_t block = units_per_block(H), blocks = (H + block - 1) / block;
  for (int t = 0; t < c.s.steps; ++t) {
    const float* da = c.a_at(t);
    float* dh = const_cast<float*>(c.h_at(t));
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t j0 = b * block, n = std::min(H, j0 + block) - j0;
      // dnnl_sgemm is row-major: dh (B, n) += da (B, G) W[:, j0:j0+n] (G, n), W's rows H floats apart.
      dnnl_sgemm('N', 'N', B, n, G, 1.0f, da, G, c.w.data() + j0, H, 1.0f, dh + j0, H);
    }
  }
}

}  // namespace

int main() {
  std::printf("recurrent products a_t += h_{t-1} W_hh^T, %d threads, GFLOP/s (median of 7)\n",
              omp_get_max_threads());
  std::printf("%5s %5s %6s  %9s %9s %9s %9s\n", "steps", "batch", "hidden", "streamed", "sgemm", "ba", "blocked");
  for (const Shape& s : kShapes) {
    Case c(s);
    OneDnnStep ba(s, false), blocked(s, true);
    const double flop = 2.0 * s.steps * s.batch * 4.0 * s.hidden * s.hidden;
    for (int repeat = 0; repeat < 2; ++repeat) {
      const double streamed = s.batch <= glassbox::kMaxStreamedBatch ? median_seconds([&] { run_streamed(c); }) : 0;
      const double on_sgemm = median_seconds([&] { run_sgemm_forward(c); });
      const double on_ba = median_seconds([&] { ba.run(c); });
      const double on_blocked = median_seconds([&] { blocked.run(c); });
      std::printf("%5d %5d %6d  %9.1f %9.1f %9.1f %9.1f\n", s.steps, s.batch, s.hidden,
                  streamed > 0 ? flop / streamed * 1e-9 : 0.0, flop / on_sgemm * 1e-9, flop / on_ba * 1e-9,
                  flop / on_blocked * 1e-9);
    }
  }
  std::printf("\nbackward dh += da_{t+1} W_hh, GFLOP/s (median of 7)\n");
  std::printf("%5s %5s %6s  %9s %9s %9s\n", "steps", "batch", "hidden", "sgemm", "ab", "blocked");
  for (const Shape& s : kShapes) {
    Case c(s);
    OneDnnStep ab(s, false, true), blocked(s, true, true);
    const double flop = 2.0 * s.steps * s.batch * 4.0 * s.hidden * s.hidden;
    for (int repeat = 0; repeat < 2; ++repeat) {
      const double on_sgemm = median_seconds([&] { run_sgemm_backward(c); });
      const double on_ab = median_seconds([&] { ab.run(c); });
      const double on_blocked = median_seconds([&] { blocked.run(c); });
      std::printf("%5d %5d %6d  %9.1f %9.1f %9.1f\n", s.steps, s.batch, s.hidden, flop / on_sgemm * 1e-9,
                  flop / on_ab * 1e-9, flop / on_blocked * 1e-9);
    }
  }
}
