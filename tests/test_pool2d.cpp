// tests/test_pool2d.cpp
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include "layers/pool2d/pool2d.h"
#include "tests/support/checks.h"

namespace glassbox {
namespace {

using Mode = Pool2d::Mode;
using Window = Pool2d::Window;

std::function<std::unique_ptr<Layer>()> make_pool(Mode mode, Window window) {
  return [=] { return std::make_unique<Pool2d>("pool", mode, window); };
}

// Distinct inputs 0.05 apart (a seeded permutation), so a finite difference of
// 1e-2 never changes which element of a window is the maximum.
void distinct_inputs(testing::LayerHarness& h) {
  std::vector<float> x(static_cast<size_t>(h.inputs[0].numel()));
  std::iota(x.begin(), x.end(), 0.0f);
  std::shuffle(x.begin(), x.end(), std::mt19937_64(99));
  for (float& v : x) v = (v - static_cast<float>(x.size()) / 2) * 0.05f;
  h.write(h.inputs[0], x);
}

std::string bind_error(Mode mode, Window window, Shape input) {
  Pool2d pool("pool1", mode, window);
  try {
    pool.bind(std::vector<Shape>{input});
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string option_error(Mode mode, Window window) {
  try {
    Pool2d pool("pool1", mode, window);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Pool2d, MaxWithTiesAndPadding) {
  Context ctx = Context::cpu();
  Pool2d pool("pool", Mode::kMax, {.kernel = 2, .stride = 2, .pad = 1});
  testing::LayerHarness h(ctx, pool, {Shape{1, 1, 3, 3}});
  ASSERT_EQ(h.output.shape(), (Shape{1, 1, 2, 2}));
  h.write(h.inputs[0], {-1.0f, 5.0f, 5.0f,    //
                        2.0f, 0.0f, 3.0f,     //
                        4.0f, 4.0f, -1.0f});  //
  h.forward();
  // Windows: {-1} (padding, counted as -inf, never wins), {5, 5}, {2, 4}, {0, 3, 4, -1}.
  EXPECT_EQ(h.read(h.output), (std::vector<float>{-1.0f, 5.0f, 4.0f, 4.0f}));
  h.write(h.output_grad, {1.0f, 2.0f, 3.0f, 4.0f});
  h.backward();
  // Each gradient goes to its window's first maximum in scan order: the tie
  // 5, 5 sends it to the left one.
  EXPECT_EQ(h.read(h.input_grads[0]), (std::vector<float>{1.0f, 2.0f, 0.0f,  //
                                                          0.0f, 0.0f, 0.0f,  //
                                                          3.0f, 4.0f, 0.0f}));
}

// 2x2 windows at stride 2 take their own backward (Note [2x2 max pooling
// backward], by kFloatLanes outputs at a time: Note [2x2 max pooling backward by
// lanes]); checked against the rule written out plainly, on values with many
// ties and some NaNs, in both gradient modes, on odd planes whose last row and
// column no window reads, with rows of fewer outputs than a block of lanes
// (4) and more (35: two blocks and 3 left).
TEST(Pool2d, Max2x2BackwardMatchesThePlainRule) {
  for (const Shape& in : {Shape{2, 3, 7, 9}, Shape{1, 2, 5, 71}}) {
    Context ctx = Context::cpu();
    Pool2d pool("pool", Mode::kMax, {.kernel = 2, .stride = 2});
    testing::LayerHarness h(ctx, pool, {in});
    std::mt19937 rng(5);
    std::vector<float> x(static_cast<size_t>(in.numel()));
    for (float& v : x) {  // 0, 1, 2: ties everywhere; a NaN now and then
      const uint32_t draw = rng() % 13;
      v = draw == 12 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(draw % 3);
    }
    h.write(h.inputs[0], x);
    const std::vector<float> dy = testing::random_values(h.output.shape().numel(), 9);
    h.write(h.output_grad, dy);
    const int64_t planes = in[0] * in[1], hh = in[2], ww = in[3], pp = hh / 2, qq = ww / 2;
    std::vector<float> expected(x.size(), 0.0f);
    for (int64_t n = 0; n < planes; ++n) {
      for (int64_t p = 0; p < pp; ++p) {
        for (int64_t q = 0; q < qq; ++q) {
          int64_t best = n * hh * ww + 2 * p * ww + 2 * q;
          for (int64_t i = 0; i < 2; ++i) {
            for (int64_t j = 0; j < 2; ++j) {
              const int64_t at = n * hh * ww + (2 * p + i) * ww + 2 * q + j;
              const float v = x[static_cast<size_t>(at)];
              if (v > x[static_cast<size_t>(best)] || v != v) best = at;  // a NaN always wins
            }
          }
          expected[static_cast<size_t>(best)] += dy[static_cast<size_t>((n * pp + p) * qq + q)];
        }
      }
    }
    h.forward();
    h.poison(h.input_grads[0]);
    h.backward();
    EXPECT_EQ(h.read(h.input_grads[0]), expected) << in.str();
    h.backward({GradMode::kAdd});
    for (float& v : expected) v *= 2.0f;
    EXPECT_EQ(h.read(h.input_grads[0]), expected) << in.str();
  }
}

TEST(Pool2d, MaxOverlappingWindowsAddTheirGradients) {
  Context ctx = Context::cpu();
  Pool2d pool("pool", Mode::kMax, {.kernel = 3, .stride = 1});
  testing::LayerHarness h(ctx, pool, {Shape{1, 1, 3, 4}});
  h.write(h.inputs[0], {0.0f, 1.0f, 2.0f, 0.5f,  //
                        0.0f, 9.0f, 3.0f, 0.5f,  //
                        0.0f, 1.0f, 2.0f, 0.5f});
  h.forward();
  EXPECT_EQ(h.read(h.output), (std::vector<float>{9.0f, 9.0f}));
  h.write(h.output_grad, {1.0f, 10.0f});
  h.backward();
  EXPECT_EQ(h.read(h.input_grads[0]), (std::vector<float>{0, 0, 0, 0, 0, 11, 0, 0, 0, 0, 0, 0}));
}

TEST(Pool2d, AverageCountsPadding) {
  Context ctx = Context::cpu();
  Pool2d pool("pool", Mode::kAverage, {.kernel = 2, .stride = 1, .pad = 1});
  testing::LayerHarness h(ctx, pool, {Shape{1, 1, 2, 2}});
  ASSERT_EQ(h.output.shape(), (Shape{1, 1, 3, 3}));
  h.write(h.inputs[0], {1.0f, 2.0f, 3.0f, 4.0f});
  h.forward();
  // Every window divides by 4, however much of it is padding.
  testing::expect_close(h.read(h.output), {0.25f, 0.75f, 0.5f, 1.0f, 2.5f, 1.5f, 0.75f, 1.75f, 1.0f}, 1e-7,
                        "average forward");
  h.write(h.output_grad, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  h.backward();
  // x[0,0] lies in windows (0,0), (0,1), (1,0), (1,1): (1 + 2 + 4 + 5) / 4, and so on.
  testing::expect_close(h.read(h.input_grads[0]), {3.0f, 4.0f, 6.0f, 7.0f}, 1e-7, "average backward");
}

// Stride-1 average pools run on the depthwise taps (Note [Average pooling by
// taps]): against the window sums in double, over planes long enough for
// blocks of 64 outputs, padding wider than a plane's edge values, and
// rectangular windows; backward against each pixel's share of every window
// that holds it, written and then added.
TEST(Pool2d, StrideOneAveragesMatchTheWindowSums) {
  struct Case {
    Pool2d::Window window;
    Shape x;
  };
  const std::vector<Case> cases = {
      {{.kernel = 3, .stride = 1, .pad = 1}, Shape{2, 3, 17, 17}},
      {{.kernel = 3, .stride = 1, .pad = 1}, Shape{1, 2, 8, 8}},
      {{.kernel = 5, .stride = 1, .pad = 2}, Shape{1, 2, 9, 7}},
      {{.kernel = {3, 1}, .stride = 1, .pad = {1, 0}}, Shape{2, 2, 6, 5}},
      {{.kernel = 2, .stride = 1}, Shape{1, 3, 40, 33}},
  };
  for (const Case& c : cases) {
    Context ctx = Context::cpu();
    Pool2d pool("pool", Mode::kAverage, c.window);
    testing::LayerHarness h(ctx, pool, {c.x});
    const std::vector<float> x = testing::random_values(c.x.numel(), 7);
    h.write(h.inputs[0], x);
    h.poison(h.output);
    h.forward();
    const Shape y = h.output.shape();
    const int64_t kh = c.window.kernel.h, kw = c.window.kernel.w, ph = c.window.pad.h, pw = c.window.pad.w;
    const std::vector<float> dy = testing::random_values(y.numel(), 8);
    std::vector<float> expected;
    std::vector<double> dx(x.size(), 0.0);
    for (int64_t plane = 0; plane < y[0] * y[1]; ++plane) {
      for (int64_t p = 0; p < y[2]; ++p) {
        for (int64_t q = 0; q < y[3]; ++q) {
          double sum = 0.0;
          const double share = dy[static_cast<size_t>((plane * y[2] + p) * y[3] + q)] / static_cast<double>(kh * kw);
          for (int64_t i = 0; i < kh; ++i) {
            for (int64_t j = 0; j < kw; ++j) {
              const int64_t r = p - ph + i, col = q - pw + j;
              if (r >= 0 && r < c.x[2] && col >= 0 && col < c.x[3]) {
                sum += x[static_cast<size_t>((plane * c.x[2] + r) * c.x[3] + col)];
                dx[static_cast<size_t>((plane * c.x[2] + r) * c.x[3] + col)] += share;
              }
            }
          }
          expected.push_back(static_cast<float>(sum / static_cast<double>(kh * kw)));
        }
      }
    }
    const std::string what = c.x.str() + " by " + pool.describe();
    testing::expect_close(h.read(h.output), expected, 1e-6, "average of " + what);
    h.write(h.output_grad, dy);
    h.poison(h.input_grads[0]);
    h.backward();
    const std::vector<float> dx_written(dx.begin(), dx.end());
    testing::expect_close(h.read(h.input_grads[0]), dx_written, 1e-6, "dx written, " + what);
    h.backward({GradMode::kAdd});
    std::vector<float> dx_added;
    for (double v : dx) dx_added.push_back(static_cast<float>(2.0 * v));
    testing::expect_close(h.read(h.input_grads[0]), dx_added, 2e-6, "dx added, " + what);
  }
}

TEST(Pool2d, GlobalAverageAndMax) {
  Context ctx = Context::cpu();
  Pool2d avg("gap", Mode::kAverage, {.global = true});
  testing::LayerHarness h(ctx, avg, {Shape{1, 2, 2, 3}});
  ASSERT_EQ(h.output.shape(), (Shape{1, 2, 1, 1}));
  h.write(h.inputs[0], {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6});
  h.forward();
  testing::expect_close(h.read(h.output), {3.5f, -3.5f}, 1e-7, "global average forward");
  h.write(h.output_grad, {3.0f, -6.0f});
  h.backward();
  testing::expect_close(h.read(h.input_grads[0]), {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, -1, -1, -1, -1, -1, -1},
                        1e-7, "global average backward");
  EXPECT_EQ(avg.window().kernel, Size2(2, 3));

  Pool2d max("gmp", Mode::kMax, {.global = true});
  testing::LayerHarness m(ctx, max, {Shape{1, 2, 2, 3}});
  m.write(m.inputs[0], {1, 7, 3, 7, 5, 6, -1, -2, -3, -4, -5, -6});
  m.forward();
  EXPECT_EQ(m.read(m.output), (std::vector<float>{7.0f, -1.0f}));
  m.write(m.output_grad, {3.0f, -6.0f});
  m.backward();
  EXPECT_EQ(m.read(m.input_grads[0]), (std::vector<float>{0, 3, 0, 0, 0, 0, -6, 0, 0, 0, 0, 0}));
}

TEST(Pool2d, ShapesOfTheClassicNets) {
  auto out = [](Window w, Shape x) {
    Pool2d pool("pool", Mode::kMax, w);
    return pool.bind(std::vector<Shape>{x});
  };
  EXPECT_EQ(out({.kernel = 3, .stride = 2}, Shape{8, 96, 55, 55}), (Shape{8, 96, 27, 27}));        // AlexNet
  EXPECT_EQ(out({.kernel = 2}, Shape{8, 64, 224, 224}), (Shape{8, 64, 112, 112}));                // VGG
  EXPECT_EQ(out({.kernel = 3, .stride = 2, .pad = 1}, Shape{8, 64, 112, 112}), (Shape{8, 64, 56, 56}));  // ResNet
  EXPECT_EQ(out({.global = true}, Shape{8, 2048, 7, 7}), (Shape{8, 2048, 1, 1}));
  EXPECT_EQ(out({.kernel = {1, 3}, .stride = {1, 2}}, Shape{1, 1, 4, 9}), (Shape{1, 1, 4, 4}));
}

// torchvision's GoogLeNet pools with ceil_mode=True: 112 -> 56 -> (conv) -> 28 -> 14 -> 7.
TEST(Pool2d, CeilModeShapesOfGoogLeNet) {
  auto out = [](Window w, int64_t size) {
    Pool2d pool("pool", Mode::kMax, w);
    return pool.bind(std::vector<Shape>{Shape{2, 8, size, size}})[2];
  };
  const Window ceil3{.kernel = 3, .stride = 2, .ceil_mode = true};
  const Window floor3{.kernel = 3, .stride = 2};
  EXPECT_EQ(out(ceil3, 112), 56);  // maxpool1
  EXPECT_EQ(out(floor3, 112), 55);
  EXPECT_EQ(out(ceil3, 56), 28);  // maxpool2
  EXPECT_EQ(out(floor3, 56), 27);
  EXPECT_EQ(out(ceil3, 28), 14);  // maxpool3
  EXPECT_EQ(out({.kernel = 2, .stride = 2, .ceil_mode = true}, 14), 7);                  // maxpool4: exact
  EXPECT_EQ(out({.kernel = 3, .stride = 1, .pad = 1, .ceil_mode = true}, 28), 28);      // branch4.0
  EXPECT_EQ(out(ceil3, 27), 13) << "exact division: ceil and floor agree";
  // The last window would start at 6, in the right padding alone (5 + 1): dropped.
  EXPECT_EQ(out({.kernel = 2, .stride = 2, .pad = 1, .ceil_mode = true}, 5), 3);
  EXPECT_EQ(out({.kernel = 3, .stride = 2, .pad = 1, .ceil_mode = true}, 6), 4);
  EXPECT_EQ(out({.kernel = 3, .stride = 2, .pad = 1}, 6), 3);
  EXPECT_EQ(pooled_length(112, 3, 2, 0, true), 56);
  EXPECT_EQ(pooled_length(7, 3, 3, 1, false), 3);
}

TEST(Pool2d, CeilModeIgnoresTheOverhang) {
  Context ctx = Context::cpu();
  Pool2d pool("pool", Mode::kMax, {.kernel = 3, .stride = 2, .ceil_mode = true});
  testing::LayerHarness h(ctx, pool, {Shape{1, 1, 4, 4}});
  ASSERT_EQ(h.output.shape(), (Shape{1, 1, 2, 2}));  // floor: 1x1
  // All negative, so an overhang read as 0 (or as anything) would show.
  h.write(h.inputs[0], {-5.0f, -1.0f, -7.0f, -3.0f,      //
                        -2.0f, -9.0f, -4.0f, -10.0f,     //
                        -11.0f, -12.0f, -8.0f, -6.0f,    //
                        -13.0f, -14.0f, -15.0f, -16.0f});
  h.forward();
  // Windows: rows 0-2 and 2-4, columns 0-2 and 2-4; row and column 4 lie past the input.
  EXPECT_EQ(h.read(h.output), (std::vector<float>{-1.0f, -3.0f, -8.0f, -6.0f}));
  h.write(h.output_grad, {1.0f, 2.0f, 3.0f, 4.0f});
  h.backward();
  EXPECT_EQ(h.read(h.input_grads[0]), (std::vector<float>{0, 1, 0, 2,  //
                                                          0, 0, 0, 0,  //
                                                          0, 0, 3, 4,  //
                                                          0, 0, 0, 0}));
}

TEST(Pool2d, Describes) {
  EXPECT_EQ(Pool2d("p", Mode::kMax, {.kernel = 3, .stride = 2}).describe(), "3x3 s2");
  EXPECT_EQ(Pool2d("p", Mode::kAverage, {.kernel = 2, .stride = 2, .pad = 1}).describe(), "2x2 s2 p1");
  EXPECT_EQ(Pool2d("p", Mode::kMax, {.kernel = 2}).describe(), "2x2 s2");
  EXPECT_EQ(Pool2d("p", Mode::kMax, {.kernel = {1, 3}, .stride = {1, 2}, .pad = {0, 1}}).describe(),
            "1x3 s1x2 p0x1");
  EXPECT_EQ(Pool2d("p", Mode::kAverage, {.global = true}).describe(), "global");
  EXPECT_EQ(Pool2d("p", Mode::kMax, {.kernel = 3, .stride = 2, .ceil_mode = true}).describe(), "3x3 s2 ceil");
  EXPECT_EQ(Pool2d("p", Mode::kAverage, {}).type(), "AvgPool2d");
  EXPECT_EQ(Pool2d("p", Mode::kMax, {}).type(), "MaxPool2d");
}

TEST(Pool2d, RejectsBadWindowsAsOptionsAndBadInputsAsShapes) {
  EXPECT_EQ(bind_error(Mode::kMax, {.kernel = 2}, Shape{2, 3}),
            "pool1 (MaxPool2d): input 0 must be (N, C, H, W), got shape (2, 3)");
  EXPECT_EQ(option_error(Mode::kMax, {.kernel = {0, 2}}),
            "pool1 (MaxPool2d): kernel must be positive, got 0x2");
  EXPECT_EQ(option_error(Mode::kAverage, {.kernel = 2, .stride = {1, -1}}),
            "pool1 (AvgPool2d): stride must be positive (0: the kernel size), got 1x-1");
  EXPECT_EQ(option_error(Mode::kMax, {.kernel = 3, .pad = {-1, 0}}),
            "pool1 (MaxPool2d): padding must not be negative, got -1x0");
  EXPECT_EQ(option_error(Mode::kMax, {.kernel = 3, .pad = 2}),
            "pool1 (MaxPool2d): padding 2x2 is more than half the 3x3 kernel");
  EXPECT_EQ(option_error(Mode::kAverage, {.kernel = 3, .stride = 2, .ceil_mode = true}),
            "pool1 (AvgPool2d): ceil mode is for max pooling only (an average window past the padding has no "
            "divisor both PyTorch and cuDNN agree on)");
  // A global window is the input's plane: a kernel, stride, padding or ceil mode beside it is refused, not ignored.
  const std::string global = "global pooling's window is the input's plane, stride 1, no padding: leave kernel, "
                             "stride, padding and ceil mode unset, got ";
  EXPECT_EQ(option_error(Mode::kMax, {.ceil_mode = true, .global = true}),
            "pool1 (MaxPool2d): " + global + "kernel 2x2, stride 0, padding 0, ceil mode");
  EXPECT_EQ(option_error(Mode::kAverage, {.kernel = 5, .pad = 9, .global = true}),
            "pool1 (AvgPool2d): " + global + "kernel 5x5, stride 0, padding 9");
  EXPECT_EQ(option_error(Mode::kAverage, {.stride = {1, 2}, .global = true}),
            "pool1 (AvgPool2d): " + global + "kernel 2x2, stride 1x2, padding 0");
  EXPECT_EQ(bind_error(Mode::kMax, {.kernel = 5}, Shape{1, 1, 3, 8}),
            "pool1 (MaxPool2d): the 5x5 window does not fit the 3x8 input plane padded by 0x0");
  EXPECT_EQ(bind_error(Mode::kMax, {.kernel = {2, 6}, .pad = {0, 1}}, Shape{1, 1, 3, 3}),
            "pool1 (MaxPool2d): the 2x6 window does not fit the 3x3 input plane padded by 0x1");
  // Padding wider than the plane: windows mostly of padding, whose loops
  // would walk a kernel of any size (2^30 over 8x8).
  EXPECT_EQ(bind_error(Mode::kMax, {.kernel = 1 << 30, .pad = 1 << 29}, Shape{1, 1, 8, 8}),
            "pool1 (MaxPool2d): padding 536870912x536870912 is wider than the 8x8 input plane; pad at most the "
            "plane's size");
  EXPECT_EQ(bind_error(Mode::kAverage, {.kernel = {1, 5}, .stride = 1, .pad = {0, 2}}, Shape{1, 1, 4, 1}),
            "pool1 (AvgPool2d): padding 0x2 is wider than the 4x1 input plane; pad at most the plane's size");
  EXPECT_EQ(bind_error(Mode::kMax, {.kernel = 3, .stride = 2, .pad = 1}, Shape{1, 1, 1, 1}), "(no error)");
  // A plane is indexed with int32 (max pooling's arg-max): at most 2^31 - 1 elements.
  EXPECT_EQ(bind_error(Mode::kMax, {.kernel = 2}, Shape{1, 1, 65535, 32768}), "(no error)");
  EXPECT_EQ(bind_error(Mode::kMax, {.kernel = 2}, Shape{1, 1, 65536, 32768}),
            "pool1 (MaxPool2d): input plane 65536x32768 has 2147483648 elements, more than 2^31 - 1 (max pooling "
            "finds its maxima by int32 index)");
}

// The window configurations every gradient and parity test runs over.
struct Case {
  const char* what;
  Window window;
  Shape input;
};
const Case kCases[] = {
    {"3x3 s2 (overlapping)", {.kernel = 3, .stride = 2}, Shape{2, 2, 7, 7}},
    {"2x2 s2", {.kernel = 2}, Shape{2, 3, 6, 6}},
    {"3x3 s2 p1", {.kernel = 3, .stride = 2, .pad = 1}, Shape{1, 2, 7, 8}},
    {"2x3 s1x2 p1", {.kernel = {2, 3}, .stride = {1, 2}, .pad = 1}, Shape{2, 2, 5, 7}},
    {"3x3 s3 p1 (stride above 2)", {.kernel = 3, .stride = 3, .pad = 1}, Shape{1, 2, 8, 9}},
    {"global", {.global = true}, Shape{2, 3, 4, 5}},
};

// Ceil mode (max pooling only): each last window hangs past the input.
const Case kCeilCases[] = {
    {"3x3 s2 ceil", {.kernel = 3, .stride = 2, .ceil_mode = true}, Shape{2, 2, 8, 8}},
    {"3x3 s2 p1 ceil", {.kernel = 3, .stride = 2, .pad = 1, .ceil_mode = true}, Shape{1, 2, 6, 7}},
    {"2x3 s2x3 ceil", {.kernel = {2, 3}, .stride = {2, 3}, .ceil_mode = true}, Shape{2, 2, 5, 7}},
    {"2x2 s2 p1 ceil (last start dropped)", {.kernel = 2, .stride = 2, .pad = 1, .ceil_mode = true},
     Shape{1, 3, 5, 5}},
};

TEST(Pool2d, MaxGradientsMatchFiniteDifferences) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.what);
    testing::check_gradients(make_pool(Mode::kMax, c.window), {c.input}, {.fill = distinct_inputs});
  }
  for (const Case& c : kCeilCases) {
    SCOPED_TRACE(c.what);
    testing::check_gradients(make_pool(Mode::kMax, c.window), {c.input}, {.fill = distinct_inputs});
  }
}

TEST(Pool2d, AverageGradientsMatchFiniteDifferences) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.what);
    testing::check_gradients(make_pool(Mode::kAverage, c.window), {c.input});
  }
}

TEST(Pool2d, CudaMatchesCpu) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.what);
    testing::check_cpu_cuda_parity(make_pool(Mode::kMax, c.window), {c.input}, {.fill = distinct_inputs});
    testing::check_cpu_cuda_parity(make_pool(Mode::kAverage, c.window), {c.input});
  }
  testing::check_cpu_cuda_parity(make_pool(Mode::kMax, {.kernel = 3, .stride = 2, .pad = 1}),
                                 {Shape{4, 16, 56, 56}});
  testing::check_cpu_cuda_parity(make_pool(Mode::kAverage, {.global = true}), {Shape{4, 64, 7, 7}});
}

// Note [Ceil-mode pooling on cuDNN] (layers/pool2d/pool2d_cuda.cpp): cuDNN is handed
// an output larger than its own size; this is what shows it computes the
// overhanging windows as PyTorch does.
TEST(Pool2d, CudaMatchesCpuInCeilMode) {
  for (const Case& c : kCeilCases) {
    SCOPED_TRACE(c.what);
    testing::check_cpu_cuda_parity(make_pool(Mode::kMax, c.window), {c.input}, {.fill = distinct_inputs});
  }
  // GoogLeNet's maxpool1.
  testing::check_cpu_cuda_parity(make_pool(Mode::kMax, {.kernel = 3, .stride = 2, .ceil_mode = true}),
                                 {Shape{2, 8, 112, 112}}, {.fill = distinct_inputs});
}

}  // namespace
}  // namespace glassbox
