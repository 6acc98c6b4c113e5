// layers/batch_norm/batch_norm_nhwc.cpp: BatchNorm2d's CPU passes on a channels-last
// input (Note [Channels-last values], graph/layouts.h).
//
// Stored NHWC, the (N, C, H, W) tensor is M = N*H*W rows of C floats, a
// channel every C floats: the work is split over rows, not channels (ResNet-56's
// first stage has 16 channels, one vector). The statistics are the NCHW
// path's sums in another order: each chunk of kRowsPerChunk rows sums its
// channels in float (as the NCHW path's lanes sum 64 values before they
// reach double), and the chunks' sums are added in double, in chunk order, so
// the result does not depend on the number of threads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "layers/batch_norm/batch_norm.h"
#include "layers/relu.h"
#include "tensor/eigen_maps.h"
#include "tensor/float_lanes.h"
#include "tensor/parallel_for.h"

namespace glassbox {
namespace {

constexpr int64_t kRowsPerChunk = 64;

struct Rows {
  int64_t m, c;  // rows (N*H*W) and channels
  explicit Rows(const Shape& x) : m(x[0] * x[2] * x[3]), c(x[1]) {}
  int64_t chunks() const { return (m + kRowsPerChunk - 1) / kRowsPerChunk; }
  int64_t row_grain() const { return std::max<int64_t>(1, kElementwiseGrain / c); }
};

// One chunk's sums, per channel k: sa[k] = sum (u - u0[k]), sab[k] = sum
// (u - u0[k]) (v - v0[k]). Each row is read whole, left to right: holding a
// few channels' sums in registers down the chunk's rows instead would read
// each row in pieces, a cache line per row and pass, slow once the tensor
// streams from beyond L2. With up to 128 channels every channel's sums stay
// in registers down the chunk (16 accumulators at 128, half of AVX-512's
// registers); with more, or a channel count that is no multiple of 16, the
// sums stay in L1. That runs about even with the NCHW path's planes
// (bench/probes/batch_norm_nhwc_passes.cpp). Every channel's sum runs down
// the rows in a fixed order.
template <int kVectors>
void chunk_sums_in_registers(const float* u, const float* u0, const float* v, const float* v0, int64_t rows,
                             float* sa, float* sab) {
  constexpr int64_t c = kVectors * kFloatLanes;
  FloatLanes a[kVectors] = {}, ab[kVectors] = {}, pu[kVectors], pv[kVectors];
  for (int j = 0; j < kVectors; ++j) pu[j] = load_lanes(u0 + j * kFloatLanes), pv[j] = load_lanes(v0 + j * kFloatLanes);
  for (int64_t r = 0; r < rows; ++r) {
    for (int j = 0; j < kVectors; ++j) {
      const FloatLanes d = load_lanes(u + r * c + j * kFloatLanes) - pu[j];
      a[j] += d;
      ab[j] += d * (load_lanes(v + r * c + j * kFloatLanes) - pv[j]);
    }
  }
  std::memcpy(sa, a, sizeof a);
  std::memcpy(sab, ab, sizeof ab);
}

void chunk_sums_in_l1(const float* __restrict u, const float* __restrict u0, const float* __restrict v,
                      const float* __restrict v0, int64_t rows, int64_t c, float* __restrict sa,
                      float* __restrict sab) {
  std::fill_n(sa, c, 0.0f);
  std::fill_n(sab, c, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* ur = u + r * c;
    const float* vr = v + r * c;
    for (int64_t k = 0; k < c; ++k) {
      const float d = ur[k] - u0[k];
      sa[k] += d;
      sab[k] += d * (vr[k] - v0[k]);
    }
  }
}

using ChunkSums = void (*)(const float*, const float*, const float*, const float*, int64_t, float*, float*);
constexpr ChunkSums kChunkSumsInRegisters[] = {
    chunk_sums_in_registers<1>, chunk_sums_in_registers<2>, chunk_sums_in_registers<3>, chunk_sums_in_registers<4>,
    chunk_sums_in_registers<5>, chunk_sums_in_registers<6>, chunk_sums_in_registers<7>, chunk_sums_in_registers<8>};

void chunk_sums(const float* u, const float* u0, const float* v, const float* v0, int64_t rows, int64_t c, float* sa,
                float* sab) {
  const int64_t vectors = c / kFloatLanes;
  if (c % kFloatLanes == 0 && vectors <= std::ssize(kChunkSumsInRegisters)) {
    kChunkSumsInRegisters[vectors - 1](u, u0, v, v0, rows, sa, sab);
  } else {
    chunk_sums_in_l1(u, u0, v, v0, rows, c, sa, sab);
  }
}

// The per-row updates. `__restrict` (the rows and the per-channel factors
// never overlap) lets the compiler vectorise them without checking.
// y = (x - centre) a + shift, or max(0, that) where `relu` (Note [A ReLU
// fused into its producer], graph/fusion.h; std::max keeps a NaN, as ReLU's
// forward does).
// With a residual z (Note [A residual add fused into its batch norm]),
// max(0, that + z).
void normalise_row(const float* __restrict x, const float* __restrict centre, const float* __restrict a,
                   const float* __restrict shift, const float* __restrict z, int64_t c, bool relu,
                   float* __restrict y) {
  if (z != nullptr) {
    for (int64_t k = 0; k < c; ++k) y[k] = std::max((x[k] - centre[k]) * a[k] + shift[k] + z[k], 0.0f);
  } else if (relu) {
    for (int64_t k = 0; k < c; ++k) y[k] = std::max((x[k] - centre[k]) * a[k] + shift[k], 0.0f);
  } else {
    for (int64_t k = 0; k < c; ++k) y[k] = (x[k] - centre[k]) * a[k] + shift[k];
  }
}

// out = dy where y > 0, else 0: a fused ReLU's backward (Note [A ReLU's
// backward fused into its producer]), on n floats, without branches (Note
// [Masks without branches] in layers/relu.h).
void mask_by_output(const float* __restrict dy, const float* __restrict y, int64_t n, float* __restrict out) {
  for (int64_t k = 0; k < n; ++k) out[k] = relu_gradient(y[k], dy[k]);
}

// dx (=, or += where `add`) dy f1 + (x - mean) f2 + f3
void input_gradient_row(const float* __restrict dy, const float* __restrict x, const float* __restrict mean,
                        const float* __restrict f1, const float* __restrict f2, const float* __restrict f3, int64_t c,
                        bool add, float* __restrict dx) {
  if (add) {
    for (int64_t k = 0; k < c; ++k) dx[k] += dy[k] * f1[k] + (x[k] - mean[k]) * f2[k] + f3[k];
  } else {
    for (int64_t k = 0; k < c; ++k) dx[k] = dy[k] * f1[k] + (x[k] - mean[k]) * f2[k] + f3[k];
  }
}

// Per channel k, over all rows: a[k] = sum (u - u0[k]), ab[k] = sum (u - u0[k]) (v - v0[k]).
// `partials`: 2 * chunks * c doubles. Where `mask` is given (laid out as u),
// u counts only where mask > 0: each chunk of u is masked into a buffer the
// size of a chunk, which stays in cache for its sums.
void channel_sums(const Rows& l, const float* u, const float* mask, const float* u0, const float* v, const float* v0,
                  double* a, double* ab, double* partials) {
  const int64_t c = l.c, chunks = l.chunks();
  double* partial_a = partials;
  double* partial_ab = partials + chunks * c;
  parallel_for(chunks, std::max<int64_t>(1, kElementwiseGrain / (kRowsPerChunk * c)), [&](int64_t begin, int64_t end) {
    std::vector<float> sa(static_cast<size_t>(c)), sab(static_cast<size_t>(c));
    std::vector<float> masked(mask != nullptr ? static_cast<size_t>(kRowsPerChunk * c) : 0);
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      const int64_t first = chunk * kRowsPerChunk, rows = std::min(l.m, first + kRowsPerChunk) - first;
      const float* chunk_u = u + first * c;
      if (mask != nullptr) {
        mask_by_output(chunk_u, mask + first * c, rows * c, masked.data());
        chunk_u = masked.data();
      }
      chunk_sums(chunk_u, u0, v + first * c, v0, rows, c, sa.data(), sab.data());
      std::copy(sa.begin(), sa.end(), partial_a + chunk * c);
      std::copy(sab.begin(), sab.end(), partial_ab + chunk * c);
    }
  });
  std::fill(a, a + c, 0.0);
  std::fill(ab, ab + c, 0.0);
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    for (int64_t k = 0; k < c; ++k) {
      a[k] += partial_a[chunk * c + k];
      ab[k] += partial_ab[chunk * c + k];
    }
  }
}

}  // namespace

size_t BatchNorm2d::nhwc_workspace_bytes() const {
  const Rows l(input_shapes()[0]);
  return static_cast<size_t>(2 * l.chunks() * l.c) * sizeof(double);
}

void BatchNorm2d::forward_cpu_nhwc(Context& ctx, const ForwardArgs& args, bool training) {
  const Rows l(input_shapes()[0]);
  const size_t c = static_cast<size_t>(l.c);
  const float* x = args.inputs[0].data<float>();
  float* y = args.output.data<float>();
  const float* scale = args.params[0].data<float>();
  const float* shift = args.params[1].data<float>();
  std::vector<float> centre(c), a(c);  // y = (x - centre) a + shift, per channel
  if (training) {
    // Sums of x - pivot, the first row's value of each channel (as the NCHW
    // path shifts by each channel's first value).
    std::vector<double> sum(c), sum_squares(c);
    channel_sums(l, x, nullptr, x, x, x, sum.data(), sum_squares.data(), static_cast<double*>(checked_workspace(ctx)));
    const double m = static_cast<double>(l.m);
    for (size_t k = 0; k < c; ++k) {
      const double mean = x[k] + sum[k] / m;
      const double var = std::max(0.0, (sum_squares[k] - sum[k] * sum[k] / m) / m);  // biased
      const double inv_std = record_batch_statistics(static_cast<int64_t>(k), mean, var);
      centre[k] = static_cast<float>(mean);
      a[k] = static_cast<float>(scale[k] * inv_std);
    }
  } else {
    for (size_t k = 0; k < c; ++k) {
      const double inv_std = 1.0 / std::sqrt(static_cast<double>(running_var_.data<float>()[k]) + options_.eps);
      centre[k] = running_mean_.data<float>()[k];
      a[k] = static_cast<float>(scale[k] * inv_std);
    }
  }
  const bool relu = fused_relu();
  const float* z = fused_residual() ? args.inputs[1].data<float>() : nullptr;
  parallel_for(l.m, l.row_grain(), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      normalise_row(x + r * l.c, centre.data(), a.data(), shift, z != nullptr ? z + r * l.c : nullptr, l.c, relu,
                    y + r * l.c);
    }
  });
}

void BatchNorm2d::backward_cpu_nhwc(Context& ctx, const BackwardArgs& args) {
  const Rows l(input_shapes()[0]);
  const size_t c = static_cast<size_t>(l.c);
  const Tensor& dx_tensor = args.input_grads[0];
  const double m = static_cast<double>(l.m);
  const float* x = args.inputs[0].data<float>();
  const float* dy = args.output_grad.data<float>();
  const float* scale = args.params[0].data<float>();
  float* dscale = args.param_grads[0].data<float>();
  float* dshift = args.param_grads[1].data<float>();
  const float* saved_mean = saved_mean_.data<float>();
  const float* saved_inv_std = saved_inv_std_.data<float>();
  // Note [A ReLU's backward fused into its producer]: dy is the ReLU's,
  // taken where y (the ReLU's output) is above 0.
  const float* y = fused_relu_backward() ? args.output.data<float>() : nullptr;
  // sum dy, sum dy (x - mean)
  const std::vector<float> zeros(c, 0.0f);
  std::vector<double> sum_dy(c), sum_dy_centred(c);
  channel_sums(l, dy, y, zeros.data(), x, saved_mean, sum_dy.data(), sum_dy_centred.data(),
               static_cast<double*>(checked_workspace(ctx)));
  // dx = k1 dy + k2 (x - mean) + k3, as in the NCHW path
  std::vector<float> f1(c), f2(c), f3(c);
  for (size_t k = 0; k < c; ++k) {
    const double inv_std = saved_inv_std[k];
    const double sum_dy_xhat = sum_dy_centred[k] * inv_std;
    dshift[k] += static_cast<float>(sum_dy[k]);
    dscale[k] += static_cast<float>(sum_dy_xhat);
    const double k1 = scale[k] * inv_std;
    f1[k] = static_cast<float>(k1);
    f2[k] = static_cast<float>(-k1 * inv_std * sum_dy_xhat / m);
    f3[k] = static_cast<float>(-k1 * sum_dy[k] / m);
  }
  // Note [A residual add fused into its batch norm]: z's gradient is the
  // masked dy, as the add would have handed it.
  const Tensor dz_tensor = fused_residual() ? args.input_grads[1] : Tensor();
  float* dz = dz_tensor.defined() ? dz_tensor.data<float>() : nullptr;
  float* dx = dx_tensor.defined() ? dx_tensor.data<float>() : nullptr;
  if (dx == nullptr && dz == nullptr) return;
  const bool add = args.input_grad_modes[0] == GradMode::kAdd;
  parallel_for(l.m, l.row_grain(), [&](int64_t begin, int64_t end) {
    std::vector<float> masked(y != nullptr ? c : 0);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t at = r * l.c;
      const float* g = dy + at;
      if (y != nullptr) {
        mask_by_output(g, y + at, l.c, masked.data());
        g = masked.data();
      }
      if (dz != nullptr) {
        write_or_add(args.input_grad_modes[1], as_array(dz + at, l.c), Eigen::Map<const Eigen::ArrayXf>(g, l.c));
      }
      if (dx != nullptr) input_gradient_row(g, x + at, saved_mean, f1.data(), f2.data(), f3.data(), l.c, add, dx + at);
    }
  });
}

}  // namespace glassbox
