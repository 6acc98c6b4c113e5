// tests/test_channels_last_cuda_layers.cpp: the CUDA layers that read
// channels-last values (batch norm, pooling, SubsamplePad), each on NHWC
// against itself on NCHW on the same GPU, value by value. The NCHW paths are
// checked against the CPU elsewhere (tests/test_batch_norm.cpp,
// tests/test_pool2d.cpp, tests/test_subsample_pad.cpp). Without a usable GPU
// every test skips, saying why. Float32 (Context::cuda: TF32 off), and batch
// norm in bf16 and fp16 too.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "graph/layouts.h"
#include "layers/batch_norm/batch_norm.h"
#include "layers/pool2d/pool2d.h"
#include "layers/subsample_pad.h"
#include "tensor/convert.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"
#include "tests/support/harness.h"
#include "tests/support/layout_runs.h"

namespace glassbox {
namespace {

// y (or dx) of the NHWC layer against the NCHW layer's, read in the layout the NHWC one stores it.
std::vector<float> in_layout(const std::vector<float>& nchw, const Shape& shape, Layout layout) {
  return layout == Layout::kNHWC ? channels_last_from_nchw(nchw, shape) : nchw;
}

// Note [Persistent batch norm on NHWC] (layers/batch_norm/batch_norm_cuda.cpp):
// the Ex calls in persistent mode against the plain ones. A training forward
// (y, the running statistics), backwards with dx written, then added (the
// parameter gradients accumulate over both, so beta = 1 shows), one wanting
// no dx (Note [BatchNorm2d scratch dx]: dx goes to y's memory), and an
// inference forward. The channel counts include ones no vector width divides.
// Tolerance 1e-4 of the largest value (expect_close): the two sum in other orders.
TEST(ChannelsLastCudaLayers, BatchNormOnNhwcMatchesItselfOnNchw) {
  GLASSBOX_REQUIRE_CUDA();
  for (const Shape& x : {Shape{2, 16, 5, 7}, Shape{4, 64, 7, 7}, Shape{3, 6, 3, 5}, Shape{2, 40, 1, 3}}) {
    const std::string what = x.str();
    Context ctx = Context::cuda(0);
    BatchNorm2d plain("bn", {.momentum = 0.25f}), nhwc("bn", {.momentum = 0.25f});
    testing::LayerHarness ref(ctx, plain, {x});
    testing::LayerHarness h(ctx, nhwc, {x});
    ref.randomize(31);
    testing::go_channels_last(h, ref, Layout::kNHWC);
    ref.forward();
    h.poison(h.output);
    h.forward();
    testing::expect_close(h.read(h.output), channels_last_from_nchw(ref.read(ref.output), x), 1e-4, what + ": y");
    testing::expect_close(h.read(nhwc.running_mean()), ref.read(plain.running_mean()), 1e-5, what + ": running mean");
    testing::expect_close(h.read(nhwc.running_var()), ref.read(plain.running_var()), 1e-5, what + ": running var");
    for (GradMode mode : {GradMode::kWrite, GradMode::kAdd}) {
      const std::string pass = what + (mode == GradMode::kWrite ? " (written)" : " (added)");
      ref.backward({mode});
      if (mode == GradMode::kWrite) h.poison(h.input_grads[0]);
      h.backward({mode});
      testing::expect_close(h.read(h.input_grads[0]), channels_last_from_nchw(ref.read(ref.input_grads[0]), x), 1e-4,
                            pass + ": dx");
      testing::expect_close(h.read(h.param_grads[0]), ref.read(ref.param_grads[0]), 1e-4, pass + ": dscale");
      testing::expect_close(h.read(h.param_grads[1]), ref.read(ref.param_grads[1]), 1e-4, pass + ": dshift");
    }
    ref.input_grads[0] = Tensor();
    h.input_grads[0] = Tensor();
    ref.backward();
    h.backward();
    testing::expect_close(h.read(h.param_grads[0]), ref.read(ref.param_grads[0]), 1e-4, what + " (no dx): dscale");
    testing::expect_close(h.read(h.param_grads[1]), ref.read(ref.param_grads[1]), 1e-4, what + " (no dx): dshift");
    ref.forward(Phase::kInference);
    h.poison(h.output);
    h.forward(Phase::kInference);
    testing::expect_close(h.read(h.output), channels_last_from_nchw(ref.read(ref.output), x), 1e-4,
                          what + ": inference y");
  }
}

// The same in bf16 and fp16, the way ResNet-50 trains: x, y, dy and dx
// 16-bit NHWC, cuDNN's persistent kernels, against the fp32 NCHW layer on the
// same 16-bit-exact inputs. dx written, then added onto the written values
// (beta = 1 in the Ex backward, which cuDNN applies to dx alone). Each
// tensor within 2^-6 (bf16) or 2^-9 (fp16) of its largest fp32 magnitude: a
// rounding or two of at most 2^-8 or 2^-11 each.
TEST(ChannelsLastCudaLayers, BatchNormOn16BitNhwcWritesAndAddsItsGradient) {
  GLASSBOX_REQUIRE_CUDA();
  using testing::relative_error;
  for (DType dtype : {DType::kBFloat16, DType::kFloat16}) {
    const double tolerance = dtype == DType::kBFloat16 ? 0x1p-6 : 0x1p-9;
    for (const Shape& x : {Shape{4, 64, 7, 7}, Shape{2, 6, 5, 7}}) {
      const std::string what = cat(name_of(dtype), " ", x.str());
      Context ctx = Context::cuda(0);
      BatchNorm2d plain("bn", {}), half("bn", {});
      testing::LayerHarness ref(ctx, plain, {x});
      ref.randomize(37);
      for (const Tensor* t : {&ref.inputs[0], &ref.output_grad}) {
        std::vector<float> values = ref.read(*t);
        for (float& v : values) v = round_to_16_bit(v, dtype);
        ref.write(*t, values);
      }
      // The harness's parameters and their gradients (fp32, as batch norm
      // keeps them), its values replaced by 16-bit NHWC ones.
      testing::LayerHarness h(ctx, half, {x});
      half.set_value_storage(dtype);
      half.set_channels_last({true}, true);
      half.prepare(ctx);
      ctx.reserve_workspace(half.workspace_bytes());
      h.copy_values_from(ref);
      const std::vector<float> nan(static_cast<size_t>(x.numel()), std::numeric_limits<float>::quiet_NaN());
      h.inputs[0] = testing::make_value(ctx, x, Layout::kNHWC, dtype, ref.read(ref.inputs[0]));
      h.output = testing::make_value(ctx, x, Layout::kNHWC, dtype, nan);
      h.output_grad = testing::make_value(ctx, x, Layout::kNHWC, dtype, ref.read(ref.output_grad));
      h.input_grads[0] = testing::make_value(ctx, x, Layout::kNHWC, dtype, nan);
      ref.forward();
      h.forward();
      EXPECT_LE(relative_error(ref.read(ref.output), testing::read_nchw(ctx, h.output)), tolerance) << what << ": y";
      for (GradMode mode : {GradMode::kWrite, GradMode::kAdd}) {
        const std::string pass = what + (mode == GradMode::kWrite ? " (written)" : " (added)");
        ref.backward({mode});
        h.backward({mode});
        EXPECT_LE(relative_error(ref.read(ref.input_grads[0]), testing::read_nchw(ctx, h.input_grads[0])), tolerance)
            << pass << ": dx";
        for (size_t k = 0; k < h.param_grads.size(); ++k) {
          EXPECT_LE(relative_error(ref.read(ref.param_grads[k]), h.read(h.param_grads[k])), tolerance)
              << pass << ": gradient of " << ref.params[k].name();
        }
      }
    }
  }
}

// Distinct inputs, so that no max window has a tie (cuDNN documents no tie rule).
void distinct_inputs(testing::LayerHarness& h) {
  std::vector<float> x(static_cast<size_t>(h.inputs[0].numel()));
  std::iota(x.begin(), x.end(), 0.0f);
  std::shuffle(x.begin(), x.end(), std::mt19937_64(41));
  for (float& v : x) v = (v - static_cast<float>(x.size()) / 2) * 0.01f;
  h.write(h.inputs[0], x);
}

// Note [Channels-last pooling on cuDNN] (layers/pool2d/pool2d_cuda.cpp): an
// NHWC x pooled into an NHWC y, and into an NCHW y through the workspace (the
// backward converting y and dy back); dx written, then added. Overlapping,
// padded, ceil-mode (Note [Ceil-mode pooling on cuDNN]) and global windows.
// Tolerance 1e-6 of the largest value for max pooling (a maximum is exact; an
// element that wins several windows sums their gradients) and 1e-5 for average.
TEST(ChannelsLastCudaLayers, PoolingOfNhwcMatchesItselfOnNchw) {
  GLASSBOX_REQUIRE_CUDA();
  using Mode = Pool2d::Mode;
  struct Case {
    std::string what;
    Mode mode;
    Pool2d::Window window;
    Shape x;
  };
  const std::vector<Case> cases = {
      {"max 3x3 s2 p1", Mode::kMax, {.kernel = 3, .stride = 2, .pad = 1}, Shape{2, 16, 9, 9}},
      {"max 2x2 s2", Mode::kMax, {.kernel = 2, .stride = 2}, Shape{2, 6, 6, 8}},
      {"max 3x3 s2 ceil", Mode::kMax, {.kernel = 3, .stride = 2, .ceil_mode = true}, Shape{2, 8, 8, 8}},
      {"max 3x3 s1 p1", Mode::kMax, {.kernel = 3, .stride = 1, .pad = 1}, Shape{1, 12, 5, 6}},
      {"avg 3x3 s1 p1", Mode::kAverage, {.kernel = 3, .stride = 1, .pad = 1}, Shape{2, 16, 6, 7}},
      {"avg 2x2 s2", Mode::kAverage, {.kernel = 2, .stride = 2}, Shape{3, 10, 6, 6}},
      {"avg global", Mode::kAverage, {.global = true}, Shape{2, 24, 5, 6}},
  };
  for (const Case& c : cases) {
    for (Layout y_layout : {Layout::kNHWC, Layout::kNCHW}) {
      const std::string what = c.what + " " + c.x.str() + " to " + std::string(name_of(y_layout));
      const double tolerance = c.mode == Mode::kMax ? 1e-6 : 1e-5;
      Context ctx = Context::cuda(0);
      Pool2d plain("pool", c.mode, c.window), nhwc("pool", c.mode, c.window);
      testing::LayerHarness ref(ctx, plain, {c.x});
      testing::LayerHarness h(ctx, nhwc, {c.x});
      ASSERT_TRUE(nhwc.can_read_channels_last(0)) << what;
      ASSERT_TRUE(nhwc.can_write_channels_last({true})) << what;
      ref.randomize(43);
      if (c.mode == Mode::kMax) distinct_inputs(ref);
      testing::go_channels_last(h, ref, y_layout);
      const Shape y = ref.output.shape();
      ref.forward();
      h.poison(h.output);
      h.forward();
      testing::expect_close(h.read(h.output), in_layout(ref.read(ref.output), y, y_layout), tolerance, what + ": y");
      for (GradMode mode : {GradMode::kWrite, GradMode::kAdd}) {
        ref.backward({mode});
        if (mode == GradMode::kWrite) h.poison(h.input_grads[0]);
        h.backward({mode});
        testing::expect_close(h.read(h.input_grads[0]), channels_last_from_nchw(ref.read(ref.input_grads[0]), c.x),
                              tolerance, what + (mode == GradMode::kWrite ? ": dx written" : ": dx added"));
      }
    }
  }
}

// The views of layers/subsample_pad_cuda.cpp on NHWC values: a stage change
// (stride 2, zero channels each side), padding only (stride 1), and a stride
// past the input (one row and column kept: the size-1 strides). Exact: the
// layer moves values and adds one term at most.
TEST(ChannelsLastCudaLayers, SubsamplePadOnNhwcMatchesItselfOnNchw) {
  GLASSBOX_REQUIRE_CUDA();
  struct Case {
    SubsamplePad::Options options;
    Shape x;
  };
  for (const Case& c : {Case{{.stride = 2, .out_channels = 32, .first_channel = 8}, Shape{2, 16, 7, 9}},
                        Case{{.stride = 1, .out_channels = 24, .first_channel = 0}, Shape{1, 16, 4, 4}},
                        Case{{.stride = 5, .out_channels = 12, .first_channel = 3}, Shape{2, 6, 3, 4}}}) {
    Context ctx = Context::cuda(0);
    SubsamplePad plain("pad", c.options), nhwc("pad", c.options);
    testing::LayerHarness ref(ctx, plain, {c.x});
    testing::LayerHarness h(ctx, nhwc, {c.x});
    const std::string what = c.x.str() + " " + plain.describe();
    ref.randomize(47);
    testing::go_channels_last(h, ref, Layout::kNHWC);
    const Shape y = ref.output.shape();
    ref.forward();
    h.poison(h.output);
    h.forward();
    EXPECT_EQ(h.read(h.output), channels_last_from_nchw(ref.read(ref.output), y)) << what << ": y";
    for (GradMode mode : {GradMode::kWrite, GradMode::kAdd}) {
      ref.backward({mode});
      if (mode == GradMode::kWrite) h.poison(h.input_grads[0]);
      h.backward({mode});
      EXPECT_EQ(h.read(h.input_grads[0]), channels_last_from_nchw(ref.read(ref.input_grads[0]), c.x))
          << what << (mode == GradMode::kWrite ? ": dx written" : ": dx added");
    }
  }
}

}  // namespace
}  // namespace glassbox
