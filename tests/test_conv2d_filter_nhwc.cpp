// tests/test_conv2d_filter_nhwc.cpp: Note [Weight gradients on NHWC values by
// GEMM] (layers/conv2d/filter_gradient_nhwc.cpp). The gradient against a
// direct sum in double, written and added, over one chunk and several; the
// rule that chooses it; and, with oneDNN held to AVX2 in this program (as on
// a CPU without AVX-512), Conv2d layers on NHWC values taking it, each pass
// against the same layer on NCHW through Glassbox's im2col path, and a
// reduced ResNet-18 trained NHWC against NCHW.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "layers/conv2d/conv2d.h"
#include "layers/conv2d/filter_gradient_nhwc.h"
#include "nets/nets.h"
#include "tensor/cpu_features.h"
#include "tests/support/checks.h"
#include "tests/support/harness.h"
#include "tests/support/layout_runs.h"

#if GLASSBOX_WITH_ONEDNN
#include "layers/conv2d/conv2d_choices_onednn.h"
#include "oneapi/dnnl/dnnl.h"
#endif

namespace glassbox {
namespace {

#if GLASSBOX_WITH_ONEDNN
// Before any oneDNN call of this program: its kernels are then the ones a CPU
// without AVX-512 gets (dnnl_set_max_cpu_isa fails once oneDNN has chosen).
const bool kHeldToAvx2 = dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx2) == dnnl_success;
#endif

struct FilterCase {
  std::string what;
  int64_t n, c, h, w, k;
  Conv2d::Options options;
  // oneDNN's AVX2 jit kernel would run the backward-filter on NHWC values:
  // for dilated layers oneDNN 2.6 picks its own GEMM (x64:gemm:jit) instead.
  bool avx2_jit = true;
  // The GEMM takes that kernel's place: from 64 channels in and out.
  bool takes_gemm() const { return avx2_jit && std::min(c, k) >= 64; }
};

NhwcFilterShape shape_of(const FilterCase& f) {
  const Conv2d::Options& o = f.options;
  const int64_t p = (f.h + 2 * o.pad.h - o.dilation.h * (o.kernel.h - 1) - 1) / o.stride.h + 1;
  const int64_t q = (f.w + 2 * o.pad.w - o.dilation.w * (o.kernel.w - 1) - 1) / o.stride.w + 1;
  return {.n = f.n, .c = f.c, .k = f.k, .p = p,
          .u = {f.h, f.w, q, o.kernel.h, o.kernel.w, o.stride.h, o.stride.w, o.pad.h, o.pad.w, o.dilation.h,
                o.dilation.w}};
}

// dW[k, c, r, s] = sum over n, p, q of dy[n, p, q, k] * x[n, ih, iw, c], in double.
std::vector<float> direct_sum(const NhwcFilterShape& s, const std::vector<float>& x, const std::vector<float>& dy) {
  const Unfold& u = s.u;
  std::vector<float> dw(static_cast<size_t>(s.k * s.c * u.r * u.s));
  for (int64_t k = 0; k < s.k; ++k) {
    for (int64_t c = 0; c < s.c; ++c) {
      for (int64_t r = 0; r < u.r; ++r) {
        for (int64_t t = 0; t < u.s; ++t) {
          double sum = 0;
          for (int64_t n = 0; n < s.n; ++n) {
            for (int64_t p = 0; p < s.p; ++p) {
              for (int64_t q = 0; q < u.q; ++q) {
                const int64_t ih = p * u.sh - u.ph + r * u.dh, iw = q * u.sw - u.pw + t * u.dw;
                if (ih < 0 || ih >= u.h || iw < 0 || iw >= u.w) continue;
                sum += double{dy[((n * s.p + p) * u.q + q) * s.k + k]} * x[((n * u.h + ih) * u.w + iw) * s.c + c];
              }
            }
          }
          dw[((k * s.c + c) * u.r + r) * u.s + t] = static_cast<float>(sum);
        }
      }
    }
  }
  return dw;
}

// Odd planes and channel counts (partial vectors), padding, strides apart,
// dilation, a rectangular kernel; the last case has more pixels than one chunk.
const std::vector<FilterCase>& filter_cases() {
  static const std::vector<FilterCase> all = {
      {"3x3 pad 1", 2, 8, 9, 9, 12, {.out_channels = 12, .kernel = 3, .pad = 1}},
      {"5x5 stride 2", 3, 3, 17, 15, 20, {.out_channels = 20, .kernel = 5, .stride = 2}},
      {"3x3 stride (2, 1) pad 1", 2, 5, 8, 7, 6, {.out_channels = 6, .kernel = 3, .stride = Size2(2, 1), .pad = 1}},
      {"3x3 dilation 2", 2, 6, 10, 10, 8, {.out_channels = 8, .kernel = 3, .pad = 2, .dilation = 2}, false},
      {"1x7 pad 0x3", 2, 10, 8, 8, 12, {.out_channels = 12, .kernel = Size2(1, 7), .pad = Size2(0, 3)}},
      {"3x3 pad 1, several chunks", 2, 64, 34, 34, 8, {.out_channels = 8, .kernel = 3, .pad = 1}},
      {"3x3 pad 1, 64 channels", 2, 64, 9, 9, 64, {.out_channels = 64, .kernel = 3, .pad = 1}},
      {"3x3 stride 2 pad 1, 64 in, 72 out", 2, 64, 11, 11, 72, {.out_channels = 72, .kernel = 3, .stride = 2, .pad = 1}},
  };
  return all;
}

TEST(NhwcFilterGradient, MatchesADirectSumWrittenAndAdded) {
  for (const FilterCase& f : filter_cases()) {
    const NhwcFilterShape s = shape_of(f);
    const int64_t rows = s.n * s.p * s.u.q;
    if (f.what.ends_with("several chunks")) {
      ASSERT_LT(nhwc_filter_chunk_rows(s), rows) << f.what << ": the case must span chunks";
    }
    const std::vector<float> x = testing::random_values(s.n * s.u.h * s.u.w * s.c, 3);
    const std::vector<float> dy = testing::random_values(rows * s.k, 4);
    const std::vector<float> want = direct_sum(s, x, dy);
    std::vector<float> workspace(nhwc_filter_workspace_floats(s));
    std::vector<float> dw(want.size(), std::numeric_limits<float>::quiet_NaN());  // written over
    nhwc_filter_gradient(s, x.data(), dy.data(), dw.data(), GradMode::kWrite, workspace.data());
    testing::expect_close(dw, want, 1e-5, f.what + ": written");
    nhwc_filter_gradient(s, x.data(), dy.data(), dw.data(), GradMode::kAdd, workspace.data());
    std::vector<float> twice = want;
    for (float& v : twice) v *= 2;
    testing::expect_close(dw, twice, 1e-5, f.what + ": added");
  }
}

#if GLASSBOX_WITH_ONEDNN
TEST(NhwcFilterGradient, TakesTheAvx2JitKernelsPlaceOnNhwcValuesInOneGroupFrom64Channels) {
  const Conv2d::Options plain{.out_channels = 64, .kernel = 3, .pad = 1};
  EXPECT_TRUE(nhwc_gemm_for_filter("jit:avx2", plain, 64, true, true));
  EXPECT_FALSE(nhwc_gemm_for_filter("jit:avx512_core", plain, 64, true, true));
  EXPECT_FALSE(nhwc_gemm_for_filter("brgconv:avx512_core", plain, 64, true, true));
  EXPECT_FALSE(nhwc_gemm_for_filter("jit_1x1:avx2", plain, 64, true, true));
  EXPECT_FALSE(nhwc_gemm_for_filter("jit:avx2", plain, 64, false, true));
  EXPECT_FALSE(nhwc_gemm_for_filter("jit:avx2", plain, 64, true, false));
  Conv2d::Options grouped = plain;
  grouped.groups = 2;
  EXPECT_FALSE(nhwc_gemm_for_filter("jit:avx2", grouped, 64, true, true));
  // Narrower products lose to oneDNN's kernel.
  EXPECT_FALSE(nhwc_gemm_for_filter("jit:avx2", plain, 32, true, true));
  Conv2d::Options narrow = plain;
  narrow.out_channels = 32;
  EXPECT_FALSE(nhwc_gemm_for_filter("jit:avx2", narrow, 256, true, true));
}

// Each pass of an NHWC layer against the NCHW reference, with the filter
// gradient written and added (testing::expect_backward_matches).
TEST(NhwcFilterGradient, AnNhwcLayerOnAvx2KernelsTakesItAndMatchesTheReference) {
  ASSERT_TRUE(kHeldToAvx2) << "oneDNN chose its kernels before this program could hold it to AVX2";
  ASSERT_FALSE(onednn_runs_avx512()) << onednn_cpu_isa();
  for (const FilterCase& f : filter_cases()) {
    Context ctx = Context::cpu();
    const Shape x{f.n, f.c, f.h, f.w};
    Conv2d plain("conv", f.options), nhwc("conv", f.options);
    plain.pin_cpu_path(Conv2d::CpuPath::kGlassbox);
    testing::LayerHarness ref(ctx, plain, {x});
    testing::LayerHarness h(ctx, nhwc, {x});
    ref.randomize(13);
    testing::go_channels_last(h, ref, Layout::kNHWC);
    const std::string what = f.what + ": " + nhwc.algorithms();
    EXPECT_EQ(nhwc.algorithms().find("bwd-filter Glassbox NHWC GEMM (in place of jit:avx2)") != std::string::npos,
              f.takes_gemm())
        << what;
    testing::expect_backward_matches(h, ref, /*dx_nhwc=*/true, 1e-5, what);
  }
}

TEST(NhwcFilterGradient, AReducedResNet18TrainsNhwcAsItDoesNchw) {
  ASSERT_TRUE(kHeldToAvx2) << "oneDNN chose its kernels before this program could hold it to AVX2";
  auto make = [] {
    return resnet({.block = ResNetConfig::Block::kBasic, .blocks = {1, 1, 1, 1}, .base_planes = 32, .image_size = 64,
                   .classes = 5},
                  2);
  };
  {
    Context ctx = Context::cpu();
    Graph graph = make();
    graph.compile(ctx, {});
    std::string gemm;
    for (const Node& node : graph.nodes()) {
      const std::string algorithms = node.is_input() ? "" : node.layer->algorithms();
      if (algorithms.find("Glassbox NHWC GEMM") != std::string::npos) gemm += (gemm.empty() ? "" : " ") + node.name;
      // oneDNN's AVX2 kernel keeps only the narrow layers' weight gradient.
      const auto* conv = dynamic_cast<const Conv2d*>(node.layer.get());
      if (conv != nullptr && algorithms.find("x and y NHWC") != std::string::npos &&
          algorithms.find("bwd-filter jit:avx2") != std::string::npos) {
        EXPECT_LT(std::min<int64_t>(conv->input_shapes()[0][1], conv->options().out_channels), 64)
            << node.name << ": " << algorithms;
      }
    }
    // From 64 channels in and out (layer2's 32 in are too few for its first);
    // on layer4's 2x2 planes at stride 1 oneDNN picks its own GEMM.
    EXPECT_EQ(gemm, "layer2.0.conv2 layer3.0.conv1 layer3.0.conv2 layer4.0.conv1");
  }
  testing::expect_same_training(testing::train_three_steps(make, true, Graph::ParamGrads::kReplace),
                                testing::train_three_steps(make, false, Graph::ParamGrads::kReplace));
}
#endif

}  // namespace
}  // namespace glassbox
