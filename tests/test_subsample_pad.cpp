// tests/test_subsample_pad.cpp
#include <gtest/gtest.h>

#include "layers/subsample_pad.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

using Options = SubsamplePad::Options;

std::function<std::unique_ptr<Layer>()> make_pad(Options options) {
  return [=] { return std::make_unique<SubsamplePad>("shortcut", options); };
}

// y[n, first + c, p, q] = x[n, c, p*s, q*s], zero in the other channels, the plain way.
std::vector<float> reference_forward(const std::vector<float>& x, const Shape& xs, const Options& o) {
  const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3], s = o.stride, k = o.out_channels;
  const int64_t p = (h + s - 1) / s, q = (w + s - 1) / s;
  std::vector<float> y(static_cast<size_t>(n * k * p * q), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t r = 0; r < p; ++r)
        for (int64_t col = 0; col < q; ++col)
          y[static_cast<size_t>(((i * k + o.first_channel + ch) * p + r) * q + col)] =
              x[static_cast<size_t>(((i * c + ch) * h + r * s) * w + col * s)];
  return y;
}

// dx[n, c, p*s, q*s] = dy[n, first + c, p, q], zero elsewhere.
std::vector<float> reference_backward(const std::vector<float>& dy, const Shape& xs, const Options& o) {
  const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3], s = o.stride, k = o.out_channels;
  const int64_t p = (h + s - 1) / s, q = (w + s - 1) / s;
  std::vector<float> dx(static_cast<size_t>(xs.numel()), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t r = 0; r < p; ++r)
        for (int64_t col = 0; col < q; ++col)
          dx[static_cast<size_t>(((i * c + ch) * h + r * s) * w + col * s)] =
              dy[static_cast<size_t>(((i * k + o.first_channel + ch) * p + r) * q + col)];
  return dx;
}

TEST(SubsamplePad, KeepsEveryOtherPixelBetweenZeroChannels) {
  Context ctx = Context::cpu();
  SubsamplePad pad("shortcut", {.stride = 2, .out_channels = 4, .first_channel = 1});
  testing::LayerHarness h(ctx, pad, {Shape{1, 2, 3, 3}});
  ASSERT_EQ(h.output.shape(), (Shape{1, 4, 2, 2}));
  h.write(h.inputs[0], {1, 2, 3, 4, 5, 6, 7, 8, 9,  //
                        10, 11, 12, 13, 14, 15, 16, 17, 18});
  h.poison(h.output);
  h.forward();
  EXPECT_EQ(h.read(h.output), (std::vector<float>{0, 0, 0, 0,      // zero channel before x's
                                                  1, 3, 7, 9,      // x[0, 0, ::2, ::2]
                                                  10, 12, 16, 18,  // x[0, 1, ::2, ::2]
                                                  0, 0, 0, 0}));   // zero channel after

  // Backward: dy's x-channels land on the grid; everything else of dx is 0 (write) or kept (add).
  h.write(h.output_grad, {100, 100, 100, 100, 1, 2, 3, 4, 5, 6, 7, 8, 100, 100, 100, 100});
  h.poison(h.input_grads[0]);
  h.backward();
  EXPECT_EQ(h.read(h.input_grads[0]), (std::vector<float>{1, 0, 2, 0, 0, 0, 3, 0, 4,  //
                                                          5, 0, 6, 0, 0, 0, 7, 0, 8}));
  h.write(h.input_grads[0], std::vector<float>(18, 0.5f));
  h.backward({GradMode::kAdd});
  EXPECT_EQ(h.read(h.input_grads[0]),
            (std::vector<float>{1.5f, 0.5f, 2.5f, 0.5f, 0.5f, 0.5f, 3.5f, 0.5f, 4.5f,  //
                                5.5f, 0.5f, 6.5f, 0.5f, 0.5f, 0.5f, 7.5f, 0.5f, 8.5f}));
}

// Enough planes for several threads, odd sizes (ceil), both placements of x.
TEST(SubsamplePad, LargeForwardAndBackwardMatchReference) {
  Context ctx = Context::cpu();
  for (const Options o : {Options{.stride = 2, .out_channels = 32, .first_channel = 8},
                          Options{.stride = 3, .out_channels = 20}, Options{.stride = 1, .out_channels = 16}}) {
    SubsamplePad pad("shortcut", o);
    const Shape xs{6, 16, 33, 31};
    testing::LayerHarness h(ctx, pad, {xs});
    h.randomize(3);
    h.poison(h.output);
    h.forward();
    EXPECT_EQ(h.read(h.output), reference_forward(h.read(h.inputs[0]), xs, o)) << pad.describe();
    h.poison(h.input_grads[0]);
    h.backward();
    const std::vector<float> written = reference_backward(h.read(h.output_grad), xs, o);
    EXPECT_EQ(h.read(h.input_grads[0]), written) << pad.describe();
    const std::vector<float> start = testing::random_values(xs.numel(), 11);
    h.write(h.input_grads[0], start);
    h.backward({GradMode::kAdd});
    std::vector<float> added = start;
    for (size_t i = 0; i < added.size(); ++i) added[i] += written[i];
    EXPECT_EQ(h.read(h.input_grads[0]), added) << pad.describe();
  }
}

TEST(SubsamplePad, OutputShapeKeepsCeilOfEachSide) {
  SubsamplePad pad("layer2.0.shortcut", {.stride = 2, .out_channels = 32, .first_channel = 8});
  EXPECT_EQ(pad.bind(std::vector<Shape>{Shape{128, 16, 32, 32}}), (Shape{128, 32, 16, 16}));
  EXPECT_EQ(pad.describe(), "s2, 16 -> 32 channels (x at 8)");
  EXPECT_EQ(pad.bind(std::vector<Shape>{Shape{1, 3, 7, 5}}), (Shape{1, 32, 4, 3}));
  SubsamplePad front("pad", {.stride = 5, .out_channels = 4});
  EXPECT_EQ(front.bind(std::vector<Shape>{Shape{2, 4, 3, 11}}), (Shape{2, 4, 1, 3}));
  EXPECT_EQ(front.describe(), "s5, 4 -> 4 channels");
}

TEST(SubsamplePad, RejectsBadOptionsAndShapes) {
  auto option_error = [](Options o) -> std::string {
    try {
      SubsamplePad pad("layer2.0.shortcut", o);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(option_error({.stride = 0, .out_channels = 32}),
            "layer2.0.shortcut (SubsamplePad): stride must be positive, got 0");
  EXPECT_EQ(option_error({.stride = 2, .out_channels = 0}),
            "layer2.0.shortcut (SubsamplePad): out_channels must be positive, got 0");
  EXPECT_EQ(option_error({.stride = 2, .out_channels = 32, .first_channel = -1}),
            "layer2.0.shortcut (SubsamplePad): first_channel must not be negative, got -1");

  auto shape_error = [](Options o, Shape input) -> std::string {
    SubsamplePad pad("layer2.0.shortcut", o);
    try {
      pad.bind(std::vector<Shape>{input});
    } catch (const ShapeError& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(shape_error({.stride = 2, .out_channels = 32}, Shape{8, 16, 32}),
            "layer2.0.shortcut (SubsamplePad): input 0 must be (N, C, H, W), got shape (8, 16, 32)");
  EXPECT_EQ(shape_error({.stride = 2, .out_channels = 16}, Shape{8, 32, 32, 32}),
            "layer2.0.shortcut (SubsamplePad): out_channels is 16, fewer than the 32 needed for the input's 32 "
            "channels from channel 0 (input (8, 32, 32, 32))");
  EXPECT_EQ(shape_error({.stride = 2, .out_channels = 32, .first_channel = 17}, Shape{8, 16, 32, 32}),
            "layer2.0.shortcut (SubsamplePad): out_channels is 32, fewer than the 33 needed for the input's 16 "
            "channels from channel 17 (input (8, 16, 32, 32))");
}

TEST(SubsamplePad, GradientsMatchFiniteDifferences) {
  testing::check_gradients(make_pad({.stride = 2, .out_channels = 6, .first_channel = 2}), {Shape{2, 3, 5, 4}});
  testing::check_gradients(make_pad({.stride = 3, .out_channels = 3}), {Shape{2, 3, 7, 6}});
}

TEST(SubsamplePad, CudaMatchesCpu) {
  testing::check_cpu_cuda_parity(make_pad({.stride = 2, .out_channels = 32, .first_channel = 8}),
                                 {Shape{4, 16, 32, 32}}, {.tolerance = 0.0});
  testing::check_cpu_cuda_parity(make_pad({.stride = 2, .out_channels = 12}), {Shape{3, 5, 9, 7}}, {.tolerance = 0.0});
  testing::check_cpu_cuda_parity(make_pad({.stride = 4, .out_channels = 7, .first_channel = 2}),
                                 {Shape{2, 5, 3, 9}}, {.tolerance = 0.0});
  testing::check_cpu_cuda_parity(make_pad({.stride = 1, .out_channels = 5}), {Shape{2, 5, 6, 6}}, {.tolerance = 0.0});
}

}  // namespace
}  // namespace glassbox
