// bench/probes/batch_norm_nhwc_passes.cpp: BatchNorm2d's backward on NHWC
// values, its two passes apart, against the same sums and update on NCHW, at
// ResNet-50's batch-8 shapes. The channel sums (sum dy, sum dy (x - mean)) in
// the ways layers/batch_norm/batch_norm_nhwc.cpp could run them:
//   lanes down rows   chunks of 64 rows, 16 channels at a time held in
//                     registers down the chunk's rows (the layer's earlier kernel)
//   rows across       chunks of 64 rows, each row read whole, left to right,
//                     into per-chunk float sums that stay in L1
//   regs across       the same order with every channel's sums in registers
//                     (16, 32, 64 and 128 channels; others as rows across)
// and the update dx = dy f1 + (x - mean) f2 + f3. Not part of the build.
//
//   g++ -O3 -march=native -fopenmp bench/probes/batch_norm_nhwc_passes.cpp -o /tmp/batch_norm_nhwc_passes
//   OMP_NUM_THREADS=2 /tmp/batch_norm_nhwc_passes
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

using Lanes = float __attribute__((vector_size(64)));
constexpr long kLanes = 16, kRowsPerChunk = 64;

Lanes load(const float* from) {
  Lanes v;
  std::memcpy(&v, from, sizeof v);
  return v;
}

template <typename Body>
double median_ms(const Body& body) {
  body();
  std::vector<double> ms;
  for (int i = 0; i < 15; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    ms.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e3);
  }
  std::nth_element(ms.begin(), ms.begin() + 7, ms.end());
  return ms[7];
}

struct Case {
  long n, c, h, w;
  long rows() const { return n * h * w; }
  long floats() const { return n * c * h * w; }
};

// Sums per chunk and channel: partial_a[chunk * c + k], partial_ab[...].
void lanes_down_rows(const Case& s, const float* u, const float* v, const float* v0, float* pa, float* pab) {
  const long c = s.c, chunks = (s.rows() + kRowsPerChunk - 1) / kRowsPerChunk;
#pragma omp parallel for schedule(static)
  for (long chunk = 0; chunk < chunks; ++chunk) {
    const long first = chunk * kRowsPerChunk, rows = std::min(s.rows(), first + kRowsPerChunk) - first;
    for (long k0 = 0; k0 < c; k0 += kLanes) {
      const Lanes pv = load(v0 + k0);
      Lanes sa{}, sab{};
      for (long r = first; r < first + rows; ++r) {
        const Lanes d = load(u + r * c + k0);
        sa += d;
        sab += d * (load(v + r * c + k0) - pv);
      }
      std::memcpy(pa + chunk * c + k0, &sa, sizeof sa);
      std::memcpy(pab + chunk * c + k0, &sab, sizeof sab);
    }
  }
}

void rows_across(const Case& s, const float* u, const float* v, const float* v0, float* pa, float* pab) {
  const long c = s.c, chunks = (s.rows() + kRowsPerChunk - 1) / kRowsPerChunk;
#pragma omp parallel for schedule(static)
  for (long chunk = 0; chunk < chunks; ++chunk) {
    const long first = chunk * kRowsPerChunk, rows = std::min(s.rows(), first + kRowsPerChunk) - first;
    float* sa = pa + chunk * c;
    float* sab = pab + chunk * c;
    std::fill_n(sa, c, 0.0f);
    std::fill_n(sab, c, 0.0f);
    for (long r = first; r < first + rows; ++r) {
      const float* ur = u + r * c;
      const float* vr = v + r * c;
#pragma omp simd
      for (long k = 0; k < c; ++k) {
        sa[k] += ur[k];
        sab[k] += ur[k] * (vr[k] - v0[k]);
      }
    }
  }
}

// Rows read whole as in rows_across, with all C = 16 V channels' sums held in
// registers down the chunk (C up to 128: 16 of the 32 vector registers).
template <int V>
void registers_across(const Case& s, const float* u, const float* v, const float* v0, float* pa, float* pab) {
  constexpr long c = 16 * V;
  const long chunks = (s.rows() + kRowsPerChunk - 1) / kRowsPerChunk;
#pragma omp parallel for schedule(static)
  for (long chunk = 0; chunk < chunks; ++chunk) {
    const long first = chunk * kRowsPerChunk, rows = std::min(s.rows(), first + kRowsPerChunk) - first;
    Lanes sa[V] = {}, sab[V] = {}, pv[V];
    for (int j = 0; j < V; ++j) pv[j] = load(v0 + j * kLanes);
    for (long r = first; r < first + rows; ++r) {
      for (int j = 0; j < V; ++j) {
        const Lanes d = load(u + r * c + j * kLanes);
        sa[j] += d;
        sab[j] += d * (load(v + r * c + j * kLanes) - pv[j]);
      }
    }
    std::memcpy(pa + chunk * c, sa, sizeof sa);
    std::memcpy(pab + chunk * c, sab, sizeof sab);
  }
}

void registers_across_any(const Case& s, const float* u, const float* v, const float* v0, float* pa, float* pab) {
  switch (s.c) {
    case 16: return registers_across<1>(s, u, v, v0, pa, pab);
    case 32: return registers_across<2>(s, u, v, v0, pa, pab);
    case 64: return registers_across<4>(s, u, v, v0, pa, pab);
    case 128: return registers_across<8>(s, u, v, v0, pa, pab);
    default: return rows_across(s, u, v, v0, pa, pab);
  }
}

// NCHW: one plane of h*w floats per (image, channel), summed in lanes.
void planes(const Case& s, const float* u, const float* v, const float* v0, float* pa, float* pab) {
  const long hw = s.h * s.w, planes = s.n * s.c;
#pragma omp parallel for schedule(static)
  for (long plane = 0; plane < planes; ++plane) {
    const float* up = u + plane * hw;
    const float* vp = v + plane * hw;
    const float mean = v0[plane % s.c];
    Lanes sa{}, sab{};
    long i = 0;
    for (; i + kLanes <= hw; i += kLanes) {
      const Lanes d = load(up + i);
      sa += d;
      sab += d * (load(vp + i) - mean);
    }
    float a = 0, ab = 0;
    for (long l = 0; l < kLanes; ++l) a += sa[l], ab += sab[l];
    for (; i < hw; ++i) a += up[i], ab += up[i] * (vp[i] - mean);
    pa[plane] = a, pab[plane] = ab;
  }
}

void update_nhwc(const Case& s, const float* dy, const float* x, const float* mean, const float* f1, const float* f2,
                 const float* f3, float* dx) {
  const long c = s.c;
#pragma omp parallel for schedule(static)
  for (long r = 0; r < s.rows(); ++r) {
#pragma omp simd
    for (long k = 0; k < c; ++k) dx[r * c + k] = dy[r * c + k] * f1[k] + (x[r * c + k] - mean[k]) * f2[k] + f3[k];
  }
}

void update_nchw(const Case& s, const float* dy, const float* x, const float* mean, const float* f1, const float* f2,
                 const float* f3, float* dx) {
  const long hw = s.h * s.w, planes = s.n * s.c;
#pragma omp parallel for schedule(static)
  for (long plane = 0; plane < planes; ++plane) {
    const long k = plane % s.c;
    const float a = f1[k], b = f2[k], m = mean[k], d = f3[k];
    const long o = plane * hw;
#pragma omp simd
    for (long i = 0; i < hw; ++i) dx[o + i] = dy[o + i] * a + (x[o + i] - m) * b + d;
  }
}

}  // namespace

int main() {
  const Case cases[] = {{8, 64, 56, 56},   {8, 256, 56, 56},  {8, 64, 112, 112}, {8, 512, 28, 28},
                        {8, 2048, 7, 7},   {64, 16, 32, 32},  {64, 32, 16, 16},  {64, 64, 8, 8},
                        {16, 128, 28, 28}, {256, 16, 32, 32}, {16, 64, 56, 56}};
  std::printf("%d threads; ms, medians of 15; GB/s counts each tensor read or written once\n", omp_get_max_threads());
  std::printf("%-18s %14s %14s %14s %14s %14s %14s\n", "shape", "lanes down", "rows across", "NCHW planes",
              "update NHWC", "update NCHW", "regs across");
  for (const Case& s : cases) {
    std::vector<float> dy(s.floats()), x(s.floats()), dx(s.floats()), mean(s.c), f(3 * s.c);
    for (long i = 0; i < s.floats(); ++i) dy[i] = float(i % 7) * 0.1f, x[i] = float(i % 11) * 0.2f;
    for (long k = 0; k < s.c; ++k) mean[k] = 0.5f, f[k] = 1.0f, f[s.c + k] = 0.1f, f[2 * s.c + k] = 0.01f;
    const long chunks = (s.rows() + kRowsPerChunk - 1) / kRowsPerChunk;
    std::vector<float> pa(std::max(chunks * s.c, s.n * s.c)), pab(pa.size());
    const double sum_gb = 2.0 * s.floats() * 4 / 1e9, update_gb = 3.0 * s.floats() * 4 / 1e9;
    const double t[] = {
        median_ms([&] { lanes_down_rows(s, dy.data(), x.data(), mean.data(), pa.data(), pab.data()); }),
        median_ms([&] { rows_across(s, dy.data(), x.data(), mean.data(), pa.data(), pab.data()); }),
        median_ms([&] { planes(s, dy.data(), x.data(), mean.data(), pa.data(), pab.data()); }),
        median_ms([&] {
          update_nhwc(s, dy.data(), x.data(), mean.data(), f.data(), f.data() + s.c, f.data() + 2 * s.c, dx.data());
        }),
        median_ms([&] {
          update_nchw(s, dy.data(), x.data(), mean.data(), f.data(), f.data() + s.c, f.data() + 2 * s.c, dx.data());
        }),
        median_ms([&] { registers_across_any(s, dy.data(), x.data(), mean.data(), pa.data(), pab.data()); })};
    char shape[32];
    std::snprintf(shape, sizeof shape, "%ldx%ldx%ldx%ld", s.n, s.c, s.h, s.w);
    std::printf("%-18s", shape);
    for (int i = 0; i < 6; ++i) {
      std::printf(" %6.3f %5.1fGB", t[i], (i == 3 || i == 4 ? update_gb : sum_gb) / (t[i] / 1e3));
    }
    std::printf("\n");
  }
}
