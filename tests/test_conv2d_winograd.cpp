// tests/test_conv2d_winograd.cpp: Note [Winograd on the CPU]
// (layers/conv2d/conv2d_choices_onednn.cpp) and Note [Winograd F(4x4, 3x3) on
// NHWC values] (layers/conv2d/winograd_nhwc.cpp). Which layers take Winograd,
// and which do not; that PrepareOptions::cpu_winograd = false keeps them all
// direct; and that Winograd computes what Glassbox's own im2col + GEMM
// computes, to Winograd's rounding, in every pass and both gradient modes, on
// NCHW and on NHWC values. oneDNN 2.6 has Winograd kernels for AVX-512 only;
// on another CPU the forward on NHWC values runs Glassbox's, and the tests of
// oneDNN's skip and say so.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "layers/conv2d/conv2d.h"
#include "tensor/cpu_features.h"
#include "graph/layouts.h"
#include "tests/support/checks.h"
#include "tests/support/harness.h"
#include "tests/support/layout_runs.h"

namespace glassbox {
namespace {

using Options = Conv2d::Options;

std::string algorithms_of(const Options& options, const Shape& x, const PrepareOptions& prepare = {}) {
  Context ctx = Context::cpu();
  Conv2d conv("conv", options);
  conv.bind(std::vector<Shape>{x});
  conv.prepare(ctx, prepare);
  return conv.algorithms();
}

bool runs_winograd(const std::string& algorithms) { return algorithms.find("jit_wino") != std::string::npos; }
bool runs_glassbox_winograd(const std::string& algorithms) {
  return algorithms.starts_with("Glassbox NHWC Winograd F(4x4, 3x3) fwd");
}

// The algorithms of `options` on x when the layer reads and writes NHWC
// values, as a graph stores them between convolutions.
std::string nhwc_algorithms_of(const Options& options, const Shape& x, const PrepareOptions& prepare = {}) {
  Conv2d conv("conv", options);
  return testing::channels_last_algorithms(conv, {x}, prepare);
}

// 64 channels in and out, 64 output tiles of 4x4: where Winograd pays.
const Options kPays{.out_channels = 64, .kernel = 3, .pad = 1};
const Shape kPaysX{4, 64, 16, 16};

// The reason a Winograd test cannot run here, or "" where it can: oneDNN 2.6
// has Winograd kernels for AVX-512 only.
std::string why_no_winograd() {
  if (!GLASSBOX_WITH_ONEDNN) return "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col)";
  if (!onednn_runs_avx512()) {
    return "oneDNN runs " + onednn_cpu_isa() + " here, and has Winograd kernels for AVX-512 only";
  }
  return "";
}

// Where oneDNN runs AVX-512 the layers where Winograd pays take it; elsewhere
// the same layers run oneDNN's direct kernels for the CPU's ISA.
TEST(Conv2dWinograd, WideLayersWithEnoughTilesTakeItInEveryPassAndUnsliced) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col)";
  if (!onednn_runs_avx512()) {
    const std::string direct = algorithms_of(kPays, kPaysX);
    EXPECT_FALSE(runs_winograd(direct)) << direct;
    EXPECT_TRUE(direct.starts_with("oneDNN fwd jit:" + onednn_cpu_isa())) << direct;
    // On NHWC values all three passes are Glassbox's Winograd.
    const std::string nhwc = nhwc_algorithms_of(kPays, kPaysX);
    EXPECT_TRUE(runs_glassbox_winograd(nhwc)) << nhwc;
    EXPECT_NE(nhwc.find("in place of oneDNN's jit:" + onednn_cpu_isa()), std::string::npos) << nhwc;
    EXPECT_NE(nhwc.find("bwd-data Glassbox NHWC Winograd F(4x4, 3x3) (in place of jit:" + onednn_cpu_isa()),
              std::string::npos)
        << nhwc;
    EXPECT_NE(nhwc.find("bwd-filter Glassbox NHWC Winograd F(3x3, 4x4) (in place of jit:" + onednn_cpu_isa()),
              std::string::npos)
        << nhwc;
    const std::string inference = nhwc_algorithms_of(kPays, kPaysX, {.phase = Phase::kInference});
    EXPECT_TRUE(runs_glassbox_winograd(inference)) << inference;
    EXPECT_EQ(inference.find("bwd"), std::string::npos) << inference;
    const std::string off = nhwc_algorithms_of(kPays, kPaysX, {.cpu_winograd = false});
    EXPECT_TRUE(off.starts_with("oneDNN fwd jit:" + onednn_cpu_isa())) << off;
    return;
  }
  // oneDNN's own Winograd, NHWC values or not.
  const std::string oneDNN_nhwc = nhwc_algorithms_of(kPays, kPaysX);
  EXPECT_TRUE(oneDNN_nhwc.starts_with("oneDNN fwd jit_wino_4x3")) << oneDNN_nhwc;
  const std::string small = algorithms_of(kPays, kPaysX);
  EXPECT_TRUE(small.starts_with("oneDNN fwd jit_wino_4x3")) << small;
  EXPECT_NE(small.find("bwd-data jit_wino_4x3"), std::string::npos) << small;
  EXPECT_NE(small.find("bwd-filter jit_wino_4x3"), std::string::npos) << small;
  // 8 images of 64 x 56 x 56 would run in slices of 2 MiB on the direct path.
  const std::string large = algorithms_of(kPays, Shape{8, 64, 56, 56});
  EXPECT_TRUE(runs_winograd(large)) << large;
  EXPECT_EQ(large.find("slices"), std::string::npos) << large;
  const std::string direct = algorithms_of(kPays, Shape{8, 64, 56, 56}, {.cpu_winograd = false});
  EXPECT_NE(direct.find("slices"), std::string::npos) << direct;
  // An inference plan builds only the forward, Winograd's too.
  const std::string inference = algorithms_of(kPays, kPaysX, {.phase = Phase::kInference});
  EXPECT_TRUE(inference.starts_with("oneDNN fwd jit_wino_4x3")) << inference;
  EXPECT_EQ(inference.find("bwd"), std::string::npos) << inference;
}

// These hold on any CPU: Winograd is never taken where it does not pay or is
// switched off.
TEST(Conv2dWinograd, OtherLayersAndTheSwitchKeepDirectKernels) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col)";
  struct Case {
    std::string what;
    Options options;
    Shape x;
    PrepareOptions prepare;
  };
  const std::vector<Case> direct = {
      {"switched off", kPays, kPaysX, {.cpu_winograd = false}},
      {"32 channels", {.out_channels = 32, .kernel = 3, .pad = 1}, Shape{16, 32, 32, 32}, {}},
      {"64 -> 32 channels", {.out_channels = 32, .kernel = 3, .pad = 1}, Shape{16, 64, 32, 32}, {}},
      {"16 tiles (512 channels at 7x7, 4 images)", {.out_channels = 512, .kernel = 3, .pad = 1}, Shape{4, 512, 7, 7},
       {}},
      {"stride 2", {.out_channels = 64, .kernel = 3, .stride = 2, .pad = 1}, Shape{16, 64, 32, 32}, {}},
      {"5x5", {.out_channels = 64, .kernel = 5, .pad = 2}, Shape{4, 64, 16, 16}, {}},
      {"dilation 2", {.out_channels = 64, .kernel = 3, .pad = 2, .dilation = 2}, Shape{4, 64, 16, 16}, {}},
      {"2 groups", {.out_channels = 128, .kernel = 3, .pad = 1, .groups = 2}, Shape{4, 128, 16, 16}, {}},
  };
  for (const Case& c : direct) {
    const std::string algorithms = algorithms_of(c.options, c.x, c.prepare);
    EXPECT_TRUE(algorithms.starts_with("oneDNN fwd ")) << c.what << ": " << algorithms;
    EXPECT_FALSE(runs_winograd(algorithms)) << c.what << ": " << algorithms;
    const std::string nhwc = nhwc_algorithms_of(c.options, c.x, c.prepare);
    EXPECT_TRUE(nhwc.starts_with("oneDNN fwd ")) << c.what << ", NHWC: " << nhwc;
    EXPECT_FALSE(runs_winograd(nhwc)) << c.what << ", NHWC: " << nhwc;
  }
}

// Winograd's transforms round differently from a direct sum, but on these
// cases by no more than the direct kernels may (tests/test_conv2d_cpu_paths.cpp):
// the worst error measured here lay between 2e-6 and 4e-6 of 1 + max |reference|.
constexpr double kWinogradTolerance = 1e-5;

struct WinogradCase {
  std::string what;
  Options options;
  Shape x;
};

const std::vector<WinogradCase>& winograd_cases() {
  static const std::vector<WinogradCase> all = {
      {"64 -> 64, pad 1", kPays, kPaysX},
      {"64 -> 96, no bias, 18x13 (partial tiles)", {.out_channels = 96, .kernel = 3, .pad = 1, .bias = false},
       Shape{4, 64, 18, 13}},
      {"80 -> 64, pad 0", {.out_channels = 64, .kernel = 3}, Shape{2, 80, 34, 30}},
  };
  return all;
}

// y, then dx and the parameter gradients written and then added, against
// the reference on NCHW; with `channels_last`, x, y and their gradients are
// stored NHWC (as a graph stores them between convolutions).
void expect_matches_reference(const WinogradCase& c, bool channels_last) {
  Context ctx = Context::cpu();
  Conv2d plain("conv", c.options), winograd("conv", c.options);
  plain.pin_cpu_path(Conv2d::CpuPath::kGlassbox);
  testing::LayerHarness ref(ctx, plain, {c.x});
  testing::LayerHarness h(ctx, winograd, {c.x});
  ref.randomize(11);
  if (channels_last) {
    ASSERT_TRUE(winograd.can_read_channels_last(0));
    testing::go_channels_last(h, ref, Layout::kNHWC);
  } else {
    h.copy_values_from(ref);
  }
  const std::string what = c.what + (channels_last ? ", NHWC: " : ", NCHW: ") + winograd.algorithms();
  const bool glassbox_winograd = channels_last && !onednn_runs_avx512();
  ASSERT_TRUE(glassbox_winograd ? runs_glassbox_winograd(winograd.algorithms()) : runs_winograd(winograd.algorithms()))
      << what;
  ref.forward();
  h.poison(h.output);
  h.forward();
  const std::vector<float> y = ref.read(ref.output);
  testing::expect_close(h.read(h.output), channels_last ? channels_last_from_nchw(y, ref.output.shape()) : y,
                        kWinogradTolerance, what + ": y");
  testing::expect_backward_matches(h, ref, channels_last, kWinogradTolerance, what);
}

TEST(Conv2dWinograd, MatchesTheReferenceOnNchwValues) {
  if (const std::string why = why_no_winograd(); !why.empty()) GTEST_SKIP() << why;
  for (const WinogradCase& c : winograd_cases()) expect_matches_reference(c, /*channels_last=*/false);
}

// oneDNN's Winograd where it has one, else Glassbox's.
TEST(Conv2dWinograd, MatchesTheReferenceOnNhwcValues) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col)";
  for (const WinogradCase& c : winograd_cases()) expect_matches_reference(c, /*channels_last=*/true);
}

}  // namespace
}  // namespace glassbox
