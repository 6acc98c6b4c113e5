// tests/test_channels_last_cuda_concat.cpp: Concat and Flatten on CUDA with
// channels-last values (Note [Concat of channels-last values],
// layers/concat_cuda.cpp; Note [Flatten of channels-last values],
// layers/flatten.h), each against the same layer on CUDA all NCHW, value by
// value, in float32 and bfloat16. Nothing is summed except dx written then
// added (twice dy's part, exact in either type), and the bfloat16 runs move
// values already rounded to bfloat16, so every comparison is exact.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "graph/layouts.h"
#include "layers/concat.h"
#include "layers/flatten.h"
#include "tensor/convert.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"
#include "tests/support/harness.h"
#include "tests/support/layout_runs.h"

namespace glassbox {
namespace {

using testing::LayerHarness;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr DType kTypes[] = {DType::kFloat32, DType::kBFloat16};

using testing::make_value;
using testing::read_nchw;

std::vector<float> poisoned(const Shape& shape) { return std::vector<float>(static_cast<size_t>(shape.numel()), kNaN); }

// Rounds ref's inputs and output gradient to `dtype`, so that the layer on
// 16-bit values moves exactly what ref moves.
void round_values(LayerHarness& ref, DType dtype) {
  if (dtype == DType::kFloat32) return;
  auto round = [&](const Tensor& t) {
    std::vector<float> values = ref.read(t);
    for (float& v : values) v = round_to_16_bit(v, dtype);
    ref.write(t, values);
  };
  for (const Tensor& x : ref.inputs) round(x);
  round(ref.output_grad);
}

// A layer's tensors in the layouts it was prepared for, in its value type:
// the inputs and dy hold ref's values, y and every dx start as NaN.
struct LayoutRun {
  std::vector<Tensor> inputs, input_grads;
  Tensor output, output_grad;
};

// Binds `layer` as ref's layer is, prepares it on CUDA in NCHW (so that it can
// say what it reads), then with inputs in `x_layouts`, y in `y_layout` and
// values in `dtype`, as a graph would.
LayoutRun prepare_run(Context& ctx, Layer& layer, const LayerHarness& ref, const std::vector<Layout>& x_layouts,
                      Layout y_layout, DType dtype) {
  layer.bind(ref.layer.input_shapes());
  layer.set_value_storage(dtype);
  layer.prepare(ctx);
  std::vector<bool> nhwc;
  for (Layout layout : x_layouts) nhwc.push_back(layout == Layout::kNHWC);
  layer.set_channels_last(nhwc, y_layout == Layout::kNHWC);
  layer.prepare(ctx);
  ctx.reserve_workspace(layer.workspace_bytes());
  LayoutRun run;
  for (size_t i = 0; i < x_layouts.size(); ++i) {
    const Shape& x = layer.input_shapes()[i];
    run.inputs.push_back(make_value(ctx, x, x_layouts[i], dtype, ref.read(ref.inputs[i])));
    run.input_grads.push_back(make_value(ctx, x, x_layouts[i], dtype, poisoned(x)));
  }
  const Shape& y = layer.output_shape();
  run.output = make_value(ctx, y, y_layout, dtype, poisoned(y));
  run.output_grad = make_value(ctx, y, y_layout, dtype, ref.read(ref.output_grad));
  return run;
}

void forward(Context& ctx, Layer& layer, const LayoutRun& run) {
  layer.forward(ctx, {.inputs = run.inputs, .output = run.output});
  ctx.synchronize();
}

void backward(Context& ctx, Layer& layer, const LayoutRun& run, const std::vector<Tensor>& input_grads,
              const std::vector<GradMode>& modes) {
  layer.backward(ctx, {.inputs = run.inputs,
                       .output = run.output,
                       .output_grad = run.output_grad,
                       .input_grads = input_grads,
                       .input_grad_modes = modes});
  ctx.synchronize();
}

// y, then every dx written and then added (onto the written values), as the
// all-NCHW layer on CUDA computes them.
void expect_matches_nchw(Layer& nchw_layer, Layer& layer, const std::vector<Shape>& shapes,
                         const std::vector<Layout>& x_layouts, Layout y_layout) {
  for (DType dtype : kTypes) {
    const std::string what = cat(layer.type(), " ", name_of(dtype), " to ", name_of(y_layout), ": ");
    Context ctx = Context::cuda(0);
    LayerHarness ref(ctx, nchw_layer, shapes);
    ref.randomize(17);
    round_values(ref, dtype);
    const LayoutRun run = prepare_run(ctx, layer, ref, x_layouts, y_layout, dtype);
    ref.forward();
    forward(ctx, layer, run);
    testing::expect_close(read_nchw(ctx, run.output), ref.read(ref.output), 0.0, what + "y");
    for (GradMode mode : {GradMode::kWrite, GradMode::kAdd}) {
      const std::vector<GradMode> modes(shapes.size(), mode);
      ref.backward(modes);
      backward(ctx, layer, run, run.input_grads, modes);
      for (size_t i = 0; i < shapes.size(); ++i) {
        testing::expect_close(read_nchw(ctx, run.input_grads[i]), ref.read(ref.input_grads[i]), 0.0,
                              cat(what, "dx", i, mode == GradMode::kWrite ? " (written)" : " (added)"));
      }
    }
  }
}

void expect_concat_matches_nchw(const std::vector<Shape>& shapes, const std::vector<Layout>& x_layouts,
                                Layout y_layout) {
  Concat plain("mixed"), tested("mixed");
  expect_matches_nchw(plain, tested, shapes, x_layouts, y_layout);
}

constexpr Layout kNCHW = Layout::kNCHW, kNHWC = Layout::kNHWC;

// Prepared on the CPU, neither layer reads or writes channels-last: the CPU
// kernels are NCHW only, and the graph's CPU plan must not change.
TEST(ChannelsLastCudaConcat, OnTheCpuNeitherLayerOffersChannelsLast) {
  Context ctx = Context::cpu();
  Concat concat("mixed");
  LayerHarness c(ctx, concat, {Shape{2, 3, 4, 5}, Shape{2, 6, 4, 5}});
  EXPECT_FALSE(concat.can_read_channels_last(0));
  EXPECT_FALSE(concat.can_read_channels_last(1));
  EXPECT_FALSE(concat.can_write_channels_last({true, true}));
  Flatten flatten("flatten");
  LayerHarness f(ctx, flatten, {Shape{2, 3, 4, 5}});
  EXPECT_FALSE(flatten.can_read_channels_last(0));
}

// On CUDA: every rank-4 input, and y whatever the inputs; Flatten's rank-4
// input only, and never its rank-2 output.
TEST(ChannelsLastCudaConcat, OnCudaBothLayersReadNhwc) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda(0);
  Concat concat("mixed");
  LayerHarness c(ctx, concat, {Shape{2, 3, 4, 5}, Shape{2, 6, 4, 5}});
  EXPECT_TRUE(concat.can_read_channels_last(0));
  EXPECT_TRUE(concat.can_read_channels_last(1));
  EXPECT_TRUE(concat.can_write_channels_last({false, false}));
  EXPECT_TRUE(concat.can_write_channels_last({true, false}));
  EXPECT_TRUE(concat.can_write_channels_last({true, true}));
  Flatten image("flatten"), features("flatten");
  LayerHarness f(ctx, image, {Shape{2, 3, 4, 5}});
  EXPECT_TRUE(image.can_read_channels_last(0));
  EXPECT_FALSE(image.can_write_channels_last({true}));
  LayerHarness g(ctx, features, {Shape{2, 60}});
  EXPECT_FALSE(features.can_read_channels_last(0));
}

TEST(ChannelsLastCudaConcat, TwoNhwcInputsIntoNhwc) {
  GLASSBOX_REQUIRE_CUDA();
  expect_concat_matches_nchw({Shape{2, 3, 5, 7}, Shape{2, 8, 5, 7}}, {kNHWC, kNHWC}, kNHWC);
}

// One input of a single channel, one of many: widths 1, 5 and 16 in rows of 22.
TEST(ChannelsLastCudaConcat, ThreeNhwcInputsIntoNhwc) {
  GLASSBOX_REQUIRE_CUDA();
  expect_concat_matches_nchw({Shape{3, 5, 4, 6}, Shape{3, 1, 4, 6}, Shape{3, 16, 4, 6}}, {kNHWC, kNHWC, kNHWC}, kNHWC);
}

TEST(ChannelsLastCudaConcat, MixedInputLayoutsIntoNhwc) {
  GLASSBOX_REQUIRE_CUDA();
  expect_concat_matches_nchw({Shape{2, 4, 3, 5}, Shape{2, 7, 3, 5}, Shape{2, 2, 3, 5}}, {kNCHW, kNHWC, kNCHW}, kNHWC);
}

TEST(ChannelsLastCudaConcat, NhwcInputsIntoNchw) {
  GLASSBOX_REQUIRE_CUDA();
  expect_concat_matches_nchw({Shape{2, 6, 5, 3}, Shape{2, 10, 5, 3}}, {kNHWC, kNHWC}, kNCHW);
  expect_concat_matches_nchw({Shape{2, 6, 5, 3}, Shape{2, 10, 5, 3}}, {kNHWC, kNCHW}, kNCHW);
}

// Concat(x, x) with x NHWC: one dx for both slots, written by the first and
// added to by the second, in slot order: dx = dy's first half + its second.
TEST(ChannelsLastCudaConcat, OneNhwcInputTwiceSumsBothHalves) {
  GLASSBOX_REQUIRE_CUDA();
  const Shape x{2, 4, 3, 5};
  Context ctx = Context::cuda(0);
  Concat plain("mixed"), tested("mixed");
  LayerHarness ref(ctx, plain, {x, x});
  ref.randomize(23);
  const LayoutRun run = prepare_run(ctx, tested, ref, {kNHWC, kNHWC}, kNHWC, DType::kFloat32);
  backward(ctx, tested, run, {run.input_grads[0], run.input_grads[0]}, {GradMode::kWrite, GradMode::kAdd});
  ref.backward();
  std::vector<float> expected = ref.read(ref.input_grads[0]);
  const std::vector<float> second = ref.read(ref.input_grads[1]);
  for (size_t e = 0; e < expected.size(); ++e) expected[e] += second[e];
  testing::expect_close(read_nchw(ctx, run.input_grads[0]), expected, 0.0, "dx");
}

// From NHWC to (N, C*H*W) in NCHW order, as the NCHW flatten has it; and
// from one channel, and from a global pooling's (N, C, 1, 1) features, whose
// two layouts are the same bytes (copied, not transformed).
TEST(ChannelsLastCudaConcat, FlattenOfNhwcIsTheNchwFlatten) {
  GLASSBOX_REQUIRE_CUDA();
  for (const Shape& x : {Shape{3, 5, 4, 6}, Shape{2, 1, 3, 3}, Shape{2, 16, 1, 1}}) {
    SCOPED_TRACE(x.str());
    Flatten plain("flatten"), tested("flatten");
    expect_matches_nchw(plain, tested, {x}, {kNHWC}, kNCHW);
  }
}

}  // namespace
}  // namespace glassbox
