// tests/test_conv2d_winograd_nhwc.cpp: Note [Winograd F(4x4, 3x3) on NHWC
// values] (layers/conv2d/winograd_nhwc.cpp). The forward against a direct sum
// in double: channel counts that fill whole vectors and those that leave a
// tail, partial edge tiles, with and without padding and bias, in one chunk
// of tiles and in several of unequal size; the input gradient the same way,
// written and added, at each padding it takes. Then, with oneDNN held to AVX2 in
// this program (as on a CPU without AVX-512, which has no Winograd kernel of
// oneDNN's), the Conv2d layers that take it and the ones that do not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "layers/conv2d/conv2d.h"
#include "layers/conv2d/winograd_nhwc.h"
#include "graph/layouts.h"
#include "tests/support/checks.h"
#include "tests/support/harness.h"
#include "tests/support/layout_runs.h"

#if GLASSBOX_WITH_ONEDNN
#include "oneapi/dnnl/dnnl.h"
#endif

namespace glassbox {
namespace {

#if GLASSBOX_WITH_ONEDNN
// Before any oneDNN call of this program (dnnl_set_max_cpu_isa fails once
// oneDNN has chosen its kernels).
const bool kHeldToAvx2 = dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx2) == dnnl_success;
#endif

// The tolerance the direct kernels are tested to, of 1 + max |reference|.
constexpr double kTolerance = 1e-5;

struct Case {
  std::string what;
  int64_t n, h, w, c, k, pad;
  bool bias;
};

WinogradShape shape_of(const Case& c) {
  return {.n = c.n, .h = c.h, .w = c.w, .c = c.c, .k = c.k, .p = c.h + 2 * c.pad - 2, .q = c.w + 2 * c.pad - 2,
          .pad_h = c.pad, .pad_w = c.pad};
}

// y[n, p, q, k] = b[k] + sum over c, r, s of w[k, c, r, s] x[n, p + r - pad, q + s - pad, c], in double.
std::vector<float> direct_sum(const WinogradShape& s, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& b) {
  std::vector<float> y(static_cast<size_t>(s.n * s.p * s.q * s.k));
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t p = 0; p < s.p; ++p) {
      for (int64_t q = 0; q < s.q; ++q) {
        for (int64_t k = 0; k < s.k; ++k) {
          double sum = b.empty() ? 0.0 : b[k];
          for (int64_t r = 0; r < 3; ++r) {
            for (int64_t t = 0; t < 3; ++t) {
              const int64_t ih = p + r - s.pad_h, iw = q + t - s.pad_w;
              if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
              const float* pixel = x.data() + ((n * s.h + ih) * s.w + iw) * s.c;
              for (int64_t c = 0; c < s.c; ++c) sum += double{w[((k * s.c + c) * 3 + r) * 3 + t]} * pixel[c];
            }
          }
          y[((n * s.p + p) * s.q + q) * s.k + k] = static_cast<float>(sum);
        }
      }
    }
  }
  return y;
}

TEST(WinogradNhwc, MatchesADirectSumOverAnyChannelsEdgesAndChunks) {
  const std::vector<Case> cases = {
      {"13 -> 10 channels (no whole vector), 9x6, pad 1", 2, 9, 6, 13, 10, 1, true},
      {"24 -> 40 channels, 11x11, pad 0, no bias", 3, 11, 11, 24, 40, 0, false},
      {"64 -> 64 channels, 8x8 (whole tiles)", 1, 8, 8, 64, 64, 1, true},
      {"128 -> 128 channels, 36x36: chunks of 122 and 121 tiles", 3, 36, 36, 128, 128, 1, true},
  };
  for (const Case& c : cases) {
    const WinogradShape s = shape_of(c);
    const std::vector<float> x = testing::random_values(s.n * s.h * s.w * s.c, 1);
    const std::vector<float> w = testing::random_values(s.k * s.c * 9, 2);
    const std::vector<float> b = c.bias ? testing::random_values(s.k, 3) : std::vector<float>{};
    std::vector<float> y(static_cast<size_t>(s.n * s.p * s.q * s.k), std::numeric_limits<float>::quiet_NaN());
    std::vector<float> workspace(winograd_workspace_floats(s));
    winograd_forward_nhwc(s, x.data(), w.data(), c.bias ? b.data() : nullptr, y.data(), workspace.data());
    testing::expect_close(y, direct_sum(s, x, w, b), kTolerance, c.what);
  }
  // The last case runs in unequal chunks, as its name says.
  const WinogradShape chunked = shape_of(cases.back());
  EXPECT_EQ(winograd_tiles(chunked), 243);
  EXPECT_EQ(winograd_chunk_tiles(chunked), 122);
}

// dx[n, h, w, c] = sum over k, r, s of w[k, c, r, s] dy[n, h - r + pad, w - s + pad, k], in double.
std::vector<float> direct_input_gradient(const WinogradShape& s, const std::vector<float>& w,
                                         const std::vector<float>& dy) {
  std::vector<float> dx(static_cast<size_t>(s.n * s.h * s.w * s.c));
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t ih = 0; ih < s.h; ++ih) {
      for (int64_t iw = 0; iw < s.w; ++iw) {
        for (int64_t c = 0; c < s.c; ++c) {
          double sum = 0.0;
          for (int64_t r = 0; r < 3; ++r) {
            for (int64_t t = 0; t < 3; ++t) {
              const int64_t p = ih - r + s.pad_h, q = iw - t + s.pad_w;
              if (p < 0 || p >= s.p || q < 0 || q >= s.q) continue;
              const float* pixel = dy.data() + ((n * s.p + p) * s.q + q) * s.k;
              for (int64_t k = 0; k < s.k; ++k) sum += double{w[((k * s.c + c) * 3 + r) * 3 + t]} * pixel[k];
            }
          }
          dx[((n * s.h + ih) * s.w + iw) * s.c + c] = static_cast<float>(sum);
        }
      }
    }
  }
  return dx;
}

TEST(WinogradNhwc, TheInputGradientMatchesADirectSumWrittenAndAdded) {
  const std::vector<Case> cases = {
      {"13 -> 10 channels, 9x6, pad 1", 2, 9, 6, 13, 10, 1, false},
      {"24 -> 40 channels, 11x11, pad 0", 3, 11, 11, 24, 40, 0, false},
      {"16 -> 24 channels, 7x10, pad 2", 2, 7, 10, 16, 24, 2, false},
  };
  for (const Case& c : cases) {
    const WinogradShape s = shape_of(c);
    const std::vector<float> w = testing::random_values(s.k * s.c * 9, 2);
    const std::vector<float> dy = testing::random_values(s.n * s.p * s.q * s.k, 4);
    const std::vector<float> before = testing::random_values(s.n * s.h * s.w * s.c, 5);
    std::vector<float> workspace(winograd_workspace_floats(s));
    const std::vector<float> expected = direct_input_gradient(s, w, dy);
    std::vector<float> dx(before.size(), std::numeric_limits<float>::quiet_NaN());
    winograd_backward_data_nhwc(s, w.data(), dy.data(), dx.data(), /*add=*/false, workspace.data());
    testing::expect_close(dx, expected, kTolerance, c.what + " (written)");
    dx = before;
    winograd_backward_data_nhwc(s, w.data(), dy.data(), dx.data(), /*add=*/true, workspace.data());
    std::vector<float> sum(before.size());
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = before[i] + expected[i];
    testing::expect_close(dx, sum, kTolerance, c.what + " (added)");
  }
}

// dW[k, c, r, s] = sum over n, p, q of dy[n, p, q, k] x[n, p + r - pad, q + s - pad, c], in double.
std::vector<float> direct_filter_gradient(const WinogradShape& s, const std::vector<float>& x,
                                          const std::vector<float>& dy) {
  std::vector<double> sums(static_cast<size_t>(s.k * s.c * 9));
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t p = 0; p < s.p; ++p) {
      for (int64_t q = 0; q < s.q; ++q) {
        const float* grad = dy.data() + ((n * s.p + p) * s.q + q) * s.k;
        for (int64_t r = 0; r < 3; ++r) {
          for (int64_t t = 0; t < 3; ++t) {
            const int64_t ih = p + r - s.pad_h, iw = q + t - s.pad_w;
            if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
            const float* pixel = x.data() + ((n * s.h + ih) * s.w + iw) * s.c;
            for (int64_t k = 0; k < s.k; ++k) {
              for (int64_t c = 0; c < s.c; ++c) sums[((k * s.c + c) * 3 + r) * 3 + t] += double{grad[k]} * pixel[c];
            }
          }
        }
      }
    }
  }
  return std::vector<float>(sums.begin(), sums.end());
}

TEST(WinogradNhwc, TheWeightGradientMatchesADirectSumWrittenAndAdded) {
  const std::vector<Case> cases = {
      {"13 -> 10 channels, 9x6, pad 1", 2, 9, 6, 13, 10, 1, false},
      {"24 -> 40 channels, 11x11, pad 0", 3, 11, 11, 24, 40, 0, false},
      {"16 -> 24 channels, 7x10, pad 2", 2, 7, 10, 16, 24, 2, false},
      {"128 -> 128 channels, 36x36: chunks of 122 and 121 tiles", 3, 36, 36, 128, 128, 1, false},
  };
  for (const Case& c : cases) {
    const WinogradShape s = shape_of(c);
    const std::vector<float> x = testing::random_values(s.n * s.h * s.w * s.c, 1);
    const std::vector<float> dy = testing::random_values(s.n * s.p * s.q * s.k, 4);
    const std::vector<float> before = testing::random_values(s.k * s.c * 9, 6);
    std::vector<float> workspace(winograd_workspace_floats(s));
    const std::vector<float> expected = direct_filter_gradient(s, x, dy);
    std::vector<float> dw(before.size(), std::numeric_limits<float>::quiet_NaN());
    winograd_filter_gradient_nhwc(s, x.data(), dy.data(), dw.data(), /*add=*/false, workspace.data());
    testing::expect_close(dw, expected, kTolerance, c.what + " (written)");
    dw = before;
    winograd_filter_gradient_nhwc(s, x.data(), dy.data(), dw.data(), /*add=*/true, workspace.data());
    std::vector<float> sum(before.size());
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = before[i] + expected[i];
    testing::expect_close(dw, sum, kTolerance, c.what + " (added)");
  }
}

#if GLASSBOX_WITH_ONEDNN
std::string nhwc_algorithms_of(const Conv2d::Options& options, const Shape& x, const PrepareOptions& prepare = {}) {
  Conv2d conv("conv", options);
  return testing::channels_last_algorithms(conv, {x}, prepare);
}

bool runs_glassbox_winograd(const std::string& algorithms) {
  return algorithms.starts_with("Glassbox NHWC Winograd F(4x4, 3x3) fwd (in place of oneDNN's jit:avx2)");
}

TEST(WinogradNhwc, Conv2dTakesItWhereWinogradPaysOnNhwcValues) {
  ASSERT_TRUE(kHeldToAvx2);
  const Conv2d::Options pays{.out_channels = 64, .kernel = 3, .pad = 1};
  const Shape x{4, 64, 16, 16};  // 64 tiles of 4x4
  const std::string taken = nhwc_algorithms_of(pays, x);
  EXPECT_TRUE(runs_glassbox_winograd(taken)) << taken;
  EXPECT_NE(taken.find("bwd-data Glassbox NHWC Winograd F(4x4, 3x3) (in place of jit:avx2)"), std::string::npos)
      << taken;
  EXPECT_NE(taken.find("bwd-filter Glassbox NHWC Winograd F(3x3, 4x4) (in place of jit:avx2)"), std::string::npos)
      << taken;
  // Padded by 2, the backward-data is a forward padded by 0: Winograd's too.
  const std::string pad2 = nhwc_algorithms_of({.out_channels = 64, .kernel = 3, .pad = 2}, x);
  EXPECT_TRUE(runs_glassbox_winograd(pad2)) << pad2;
  EXPECT_NE(pad2.find("bwd-data Glassbox NHWC Winograd"), std::string::npos) << pad2;
  // Images too large for oneDNN's slices of the batch (Note [Convolutions by
  // slices of the batch]): Winograd's passes take the whole batch, and say no slices.
  const std::string large = nhwc_algorithms_of(pays, Shape{8, 64, 56, 56});
  EXPECT_TRUE(runs_glassbox_winograd(large)) << large;
  EXPECT_EQ(large.find("slices"), std::string::npos) << large;
  struct Direct {
    std::string what;
    Conv2d::Options options;
    Shape x;
    PrepareOptions prepare;
  };
  const std::vector<Direct> direct = {
      {"switched off (--no-winograd)", pays, x, {.cpu_winograd = false}},
      {"32 channels", {.out_channels = 32, .kernel = 3, .pad = 1}, Shape{16, 32, 32, 32}, {}},
      {"16 tiles", {.out_channels = 64, .kernel = 3, .pad = 1}, Shape{1, 64, 16, 16}, {}},
      {"stride 2", {.out_channels = 64, .kernel = 3, .stride = 2, .pad = 1}, Shape{16, 64, 32, 32}, {}},
      {"dilation 2", {.out_channels = 64, .kernel = 3, .pad = 2, .dilation = 2}, Shape{4, 64, 16, 16}, {}},
      // A ring of outputs reads padding only: a direct sum makes them exactly
      // the bias, where Winograd's would be off by a rounding.
      {"padded by 3", {.out_channels = 64, .kernel = 3, .pad = 3}, x, {}},
  };
  for (const Direct& d : direct) {
    const std::string algorithms = nhwc_algorithms_of(d.options, d.x, d.prepare);
    EXPECT_TRUE(algorithms.starts_with("oneDNN fwd ")) << d.what << ": " << algorithms;  // a direct kernel
  }
  // On NCHW values oneDNN's direct kernel keeps the forward.
  Context ctx = Context::cpu();
  Conv2d nchw("conv", pays);
  nchw.bind(std::vector<Shape>{x});
  nchw.prepare(ctx);
  EXPECT_TRUE(nchw.algorithms().starts_with("oneDNN fwd jit:avx2")) << nchw.algorithms();
}

// The layer's forward with a fused ReLU, against Glassbox's im2col path on
// the same values; then a NaN in x stays NaN through the ReLU, as Note [No
// ReLU post-op] wants. (Winograd spreads it to the whole 4x4 tile, where a
// direct sum reaches only the outputs whose window holds it: either way the
// loss turns NaN and the finite check names the input.)
TEST(WinogradNhwc, Conv2dForwardWithAFusedReluMatchesTheReference) {
  ASSERT_TRUE(kHeldToAvx2);
  const Conv2d::Options options{.out_channels = 72, .kernel = 3, .pad = 1};
  const Shape x{2, 64, 23, 29};  // 96 tiles, the last row and column partial
  Context ctx = Context::cpu();
  Conv2d plain("conv", options), conv("conv", options);
  plain.pin_cpu_path(Conv2d::CpuPath::kGlassbox);
  testing::LayerHarness ref(ctx, plain, {x});
  testing::LayerHarness h(ctx, conv, {x});
  ref.randomize(5);
  conv.set_channels_last({true}, /*output=*/true);
  conv.set_fused_relu(ctx, Phase::kTraining, true);
  conv.prepare(ctx);
  ctx.reserve_workspace(conv.workspace_bytes());
  h.copy_values_from(ref);
  h.inputs[0] = h.inputs[0].with_layout(Layout::kNHWC);
  h.output = h.output.with_layout(Layout::kNHWC);
  std::vector<float> values = ref.read(ref.inputs[0]);
  h.write(h.inputs[0], channels_last_from_nchw(values, x));
  ASSERT_TRUE(runs_glassbox_winograd(conv.algorithms())) << conv.algorithms();
  EXPECT_NE(conv.algorithms().find("; ReLU applied to y after the transform"), std::string::npos) << conv.algorithms();
  ref.forward();
  h.poison(h.output);
  h.forward();
  std::vector<float> y = channels_last_from_nchw(ref.read(ref.output), ref.output.shape());
  for (float& v : y) v = std::max(v, 0.0f);
  testing::expect_close(h.read(h.output), y, kTolerance, conv.algorithms());

  values[0] = std::numeric_limits<float>::quiet_NaN();
  h.write(h.inputs[0], channels_last_from_nchw(values, x));
  h.forward();
  EXPECT_TRUE(std::isnan(h.read(h.output)[0])) << "a NaN at x[0] reaches y[0] through the ReLU";
}
#endif

}  // namespace
}  // namespace glassbox
