// layers/lrn.cpp: options, shapes and the CPU path.
//
// Note [What cuDNN's LRN computes]
// From the cuDNN API reference for cudnnSetLRNDescriptor and the comments in
// cudnn_ops.h (cuDNN 9), paraphrased:
//   - channel c is normalised over the window [c - lookBehind, c + lookAhead]
//     with lookBehind = floor((n - 1) / 2) and lookAhead = n - lookBehind - 1,
//     which for odd n is the centred window c - n/2 .. c + n/2;
//   - lrnAlpha is divided by the window width n inside the library (for
//     cross-channel LRN), so the sum of squares is scaled by alpha / n;
//   - lrnN must lie in [CUDNN_LRN_MIN_N, CUDNN_LRN_MAX_N] = [1, 16],
//     lrnK >= CUDNN_LRN_MIN_K = 1e-5 and lrnBeta >= CUDNN_LRN_MIN_BETA = 0.01.
// PyTorch's LocalResponseNorm scales by alpha / n too, and for odd n its
// window is the same centred one, zero-padded at the first and last channel.
// So the header's formula is all three for odd sizes. (OpenCV's cuDNN wrapper
// and matconvnet issue #339 record the same alpha / n reading of cuDNN.)
//
// CPU: work items are (n, block of spatial positions); within one, each
// channel's window sum is a short loop of vectorised rows of the block.
#include "layers/lrn.h"

#include <algorithm>
#include <cmath>

#include "tensor/eigen_maps.h"
#include "tensor/parallel_for.h"

namespace glassbox {
namespace {

// Spatial positions per work item: a block row of every channel in the
// window stays in L1 (the backward ring holds 2 x 16 rows of it).
constexpr int64_t kBlock = 128;
constexpr int kRing = 16;  // >= the largest window (kMaxSize)

using BlockArray = Eigen::Array<float, Eigen::Dynamic, 1, 0, kBlock, 1>;  // on the stack
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

// s^(-beta) and s^(-beta - 1), elementwise. beta = 0.75 (AlexNet, GoogLeNet)
// takes square roots instead of a log and an exp.
void inverse_powers(const ConstArrayMap& s, float beta, float* pow_beta, float* pow_beta1) {
  const int64_t n = s.size();
  if (beta == 0.75f) {
    const BlockArray r = s.rsqrt();          // s^-0.5
    const BlockArray r3_4 = r * r.sqrt();    // s^-0.75
    as_array(pow_beta, n) = r3_4;
    if (pow_beta1 != nullptr) as_array(pow_beta1, n) = r3_4 * r * r;  // s^-1.75
    return;
  }
  const BlockArray log_s = s.log();
  if (pow_beta1 == nullptr) {
    as_array(pow_beta, n) = (log_s * -beta).exp();
    return;
  }
  as_array(pow_beta1, n) = (log_s * (-beta - 1.0f)).exp();
  as_array(pow_beta, n) = as_array(pow_beta1, n) * s;
}

// The tensor as (N, C, HW) and the work split over (n, spatial block).
struct Blocks {
  int64_t n, c, hw, blocks;
  explicit Blocks(const Shape& x) : n(x[0]), c(x[1]), hw(x[2] * x[3]), blocks((hw + kBlock - 1) / kBlock) {}
  int64_t grain() const { return std::max<int64_t>(1, kElementwiseGrain / (c * kBlock)); }
};

}  // namespace

LocalResponseNorm::LocalResponseNorm(std::string name, Options options)
    : Layer(std::move(name)), options_(options) {
  const Options& o = options_;
  if (o.size < kMinSize || o.size > kMaxSize) {
    fail_option(cat("size must be between ", kMinSize, " and ", kMaxSize, " (cuDNN's limits), got ", o.size));
  }
  if (o.size % 2 == 0) fail_option(cat("size must be odd (a centred window), got ", o.size));
  if (!(o.alpha >= 0.0f) || !std::isfinite(o.alpha)) {
    fail_option(cat("alpha must be finite and not negative, got ", o.alpha));
  }
  // Compared as the doubles cuDNN receives.
  if (!(static_cast<double>(o.beta) >= kMinBeta) || !std::isfinite(o.beta)) {
    fail_option(cat("beta must be at least ", kMinBeta, " (cuDNN's minimum) and finite, got ", o.beta));
  }
  if (!(static_cast<double>(o.k) >= kMinK) || !std::isfinite(o.k)) {
    fail_option(cat("k must be at least ", kMinK, " (cuDNN's minimum) and finite, got ", o.k));
  }
}

std::string LocalResponseNorm::describe() const {
  return cat("size ", options_.size, ", alpha ", options_.alpha, ", beta ", options_.beta, ", k ", options_.k);
}

Shape LocalResponseNorm::infer(std::span<const Shape> inputs) const {
  expect_rank(inputs, 0, 4, "(N, C, H, W)");
  return inputs[0];
}

void LocalResponseNorm::prepare_cpu(Context& ctx, const PrepareOptions&) {
  scale_ = ctx.allocate(input_shapes()[0], DType::kFloat32, MemoryCategory::kLayerState);
}

void LocalResponseNorm::forward_cpu(Context&, const ForwardArgs& args) {
  const Blocks l(input_shapes()[0]);
  const int half = options_.size / 2;
  const float alpha_over_n = options_.alpha / static_cast<float>(options_.size);
  const float k = options_.k, beta = options_.beta;
  const float* x = args.inputs[0].data<float>();
  float* y = args.output.data<float>();
  float* s = scale_.data<float>();
  parallel_for(l.n * l.blocks, l.grain(), [&](int64_t begin, int64_t end) {
    BlockArray sum(kBlock);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / l.blocks;
      const int64_t first = (item % l.blocks) * kBlock;
      const int64_t len = std::min(kBlock, l.hw - first);
      const int64_t base = n * l.c * l.hw + first;  // (n, 0, first)
      auto row = [&](const float* t, int64_t c) { return ConstArrayMap(t + base + c * l.hw, len); };
      for (int64_t c = 0; c < l.c; ++c) {
        const int64_t lo = std::max<int64_t>(0, c - half), hi = std::min<int64_t>(l.c - 1, c + half);
        sum.head(len).setZero();
        for (int64_t j = lo; j <= hi; ++j) sum.head(len) += row(x, j).square();
        float* s_row = s + base + c * l.hw;
        as_array(s_row, len) = sum.head(len) * alpha_over_n + k;
        float* y_row = y + base + c * l.hw;
        inverse_powers(ConstArrayMap(s_row, len), beta, y_row, nullptr);
        as_array(y_row, len) *= row(x, c);
      }
    }
  });
}

// With y = x s^-beta and ds[c]/dx[j] = 2 alpha / n x[j] for j in c's window
// (and, the window being symmetric, c in j's):
//   dx[j] = dy[j] s[j]^-beta - 2 alpha beta / n x[j] sum_{c in window(j)} dy[c] x[c] s[c]^(-beta-1)
void LocalResponseNorm::backward_cpu(Context&, const BackwardArgs& args) {
  static_assert(kRing >= kMaxSize, "the rings must hold a whole window");
  const Tensor& dx_tensor = args.input_grads[0];
  if (!dx_tensor.defined()) return;
  const Blocks l(input_shapes()[0]);
  const int half = options_.size / 2;
  const float coef = 2.0f * options_.alpha * options_.beta / static_cast<float>(options_.size);
  const float beta = options_.beta;
  const float* x = args.inputs[0].data<float>();
  const float* dy = args.output_grad.data<float>();
  const float* s = scale_.data<float>();
  float* dx = dx_tensor.data<float>();
  parallel_for(l.n * l.blocks, l.grain(), [&](int64_t begin, int64_t end) {
    // Per channel of the current window: s^-beta and t = dy x s^(-beta-1),
    // each computed once and kept until the window moves past it.
    float pow_ring[kRing][kBlock];
    float t_ring[kRing][kBlock];
    BlockArray sum(kBlock);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / l.blocks;
      const int64_t first = (item % l.blocks) * kBlock;
      const int64_t len = std::min(kBlock, l.hw - first);
      const int64_t base = n * l.c * l.hw + first;
      auto row = [&](const float* t, int64_t c) { return ConstArrayMap(t + base + c * l.hw, len); };
      int64_t ready = 0;  // channels [0, ready) are in the rings
      for (int64_t c = 0; c < l.c; ++c) {
        const int64_t lo = std::max<int64_t>(0, c - half), hi = std::min<int64_t>(l.c - 1, c + half);
        for (; ready <= hi; ++ready) {
          float* pw = pow_ring[ready % kRing];
          float* t = t_ring[ready % kRing];
          inverse_powers(row(s, ready), beta, pw, t);
          as_array(t, len) *= row(dy, ready) * row(x, ready);
        }
        sum.head(len).setZero();
        for (int64_t j = lo; j <= hi; ++j) sum.head(len) += as_array(t_ring[j % kRing], len);
        auto grad = row(dy, c) * as_array(pow_ring[c % kRing], len) - coef * row(x, c) * sum.head(len);
        float* dx_row = dx + base + c * l.hw;
        write_or_add(args.input_grad_modes[0], as_array(dx_row, len), grad);
      }
    }
  });
}

}  // namespace glassbox

#if !GLASSBOX_WITH_CUDA
namespace glassbox {
GLASSBOX_LAYER_WITHOUT_CUDA(LocalResponseNorm)
}  // namespace glassbox
#endif
