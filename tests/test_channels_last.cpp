// tests/test_channels_last.cpp: Note [Channels-last values]
// (graph/layouts.h). Which values the graph stores NHWC (where oneDNN's
// convolutions, ReLU and max pooling meet, and nowhere a layer needs NCHW);
// that training and inference compute what the all-NCHW graph computes,
// value by value; and max pooling on NHWC against Pool2d's NCHW paths,
// outputs and gradients exact.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "data/synthetic.h"
#include "graph/builder.h"
#include "graph/layouts.h"
#include "layers/conv2d/conv2d.h"
#include "layers/pool2d/pool2d.h"
#include "layers/relu.h"
#include "optim/sgd.h"
#include "tensor/copy.h"
#include "tensor/cpu_features.h"
#include "tests/support/checks.h"
#include "tests/support/harness.h"
#include "tests/support/layout_runs.h"

namespace glassbox {
namespace {

// oneDNN convolutions in a row (one of 24 channels, for the bias gradient's
// last partial vector), max pooling between convolutions and
// before a flatten (overlapping windows, padding), batch norm between two
// convolutions, and a 1x1 convolution at stride 1 (NCHW only, Note [1x1
// convolutions on NHWC values]).
Graph net(int batch) {
  GraphBuilder g;
  Value x = g.input("images", {batch, 3, 12, 12});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  x = g.relu(g.conv(x, {.out_channels = 16, .kernel = 3, .pad = 1}, "conv_a"), "relu_a");
  x = g.relu(g.conv(x, {.out_channels = 24, .kernel = 3, .pad = 1}, "conv_t"), "relu_t");  // 24: a vector and 8 more
  x = g.relu(g.conv(x, {.out_channels = 16, .kernel = 3, .pad = 1}, "conv_b"), "relu_b");
  x = g.max_pool(x, {.kernel = 2, .stride = 2}, "pool_b");
  const Value normed = g.relu(g.batch_norm(g.conv(x, {.out_channels = 16, .kernel = 3, .pad = 1, .bias = false}, "conv_n")),
                              "relu_n");
  x = g.relu(g.conv(normed, {.out_channels = 32, .kernel = 3, .pad = 1}, "conv_c"), "relu_c");
  x = g.relu(g.conv(x, {.out_channels = 32, .kernel = 1}, "conv_p"), "relu_p");
  x = g.max_pool(x, {.kernel = 3, .stride = 2, .pad = 1}, "pool_c");
  const Value loss = g.softmax_cross_entropy(g.linear(g.flatten(x), {.out_features = 5}, "fc"), labels);
  return std::move(g).build(loss);
}

// The layout column names a conversion only where the two layouts place the
// input's elements apart: one channel (LeNet's images) or one pixel is the
// same bytes either way, and a CUDA layer reads it as it is (LayoutBridge).
TEST(ChannelsLast, ALayoutPathNamesAConversionOnlyWhereTheBytesDiffer) {
  std::vector<Node> nodes(2);
  nodes[0].dtype = nodes[1].dtype = DType::kFloat32;
  nodes[1].shape = Shape{8, 6, 24, 24};
  nodes[1].channels_last = true;
  nodes[1].inputs = {0};
  const std::pair<Shape, const char*> cases[] = {
      {Shape{8, 1, 28, 28}, "NHWC"}, {Shape{8, 64, 1, 1}, "NHWC"}, {Shape{8, 3, 28, 28}, "NHWC from NCHW"}};
  for (const auto& [input, path] : cases) {
    nodes[0].shape = input;
    EXPECT_EQ(layout_path(nodes, nodes[1]), path) << input.str();
  }
}

TEST(ChannelsLast, TheGraphStoresNhwcWhereEveryWriterAndReaderCan) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col): every value is NCHW";
  for (Phase phase : {Phase::kTraining, Phase::kInference}) {
    Context ctx = Context::cpu();
    Graph graph = net(2);
    graph.compile(ctx, {.phase = phase});
    std::string nhwc;
    for (const Node& node : graph.nodes()) {
      if (node.channels_last) nhwc += (nhwc.empty() ? "" : " ") + node.name;
      EXPECT_EQ(node.value.layout(), node.channels_last ? Layout::kNHWC : Layout::kNCHW) << node.name;
      if (node.grad.defined()) {
        EXPECT_EQ(node.grad.layout(), node.value.layout()) << node.name;
      }
    }
    // conv_a reads the images NCHW; batch norm keeps conv_n's layout; conv_p,
    // 1x1 at stride 1, and the layers it meets stay NCHW.
    EXPECT_EQ(nhwc, "conv_a relu_a conv_t relu_t conv_b relu_b pool_b conv_n bn1 relu_n")
        << (phase == Phase::kTraining ? "training" : "inference");
    EXPECT_NE(graph.node("conv_b").layer->algorithms().find("x and y NHWC"), std::string::npos)
        << graph.node("conv_b").layer->algorithms();
    // Note [Weight gradients on NHWC values by GEMM]: not from 24 channels to
    // 16, on any CPU.
    if (phase == Phase::kTraining) {
      const std::string conv_b = graph.node("conv_b").layer->algorithms();
      EXPECT_EQ(conv_b.find("Glassbox NHWC GEMM"), std::string::npos) << conv_b;
    }
    // Note [A few input channels in NHWC]: conv_a's 3 input channels are
    // reordered to NHWC, and oneDNN's kernel for this CPU (brgconv where it
    // runs AVX-512, jit:avx2 on AVX2) writes y as it is stored.
    const std::string conv_a = graph.node("conv_a").layer->algorithms();
    const std::string reordered = phase == Phase::kTraining ? "; y NHWC; x reordered to NHWC for fwd and bwd-filter"
                                                            : "; y NHWC; x reordered to NHWC for fwd";
    EXPECT_TRUE(conv_a.ends_with(reordered)) << conv_a;
    const std::string kernel = onednn_runs_avx512() ? "oneDNN fwd brgconv" : "oneDNN fwd jit:" + onednn_cpu_isa();
    EXPECT_TRUE(conv_a.starts_with(kernel)) << conv_a << " (oneDNN runs " << onednn_cpu_isa() << " here)";

    Graph nchw = net(2);
    nchw.compile(ctx, {.phase = phase, .layout = LayoutChoice::kNchw});
    for (const Node& node : nchw.nodes()) EXPECT_FALSE(node.channels_last) << node.name;
  }
}

// Every value of a training step (memory reuse off, so each can be read
// afterwards), the loss and every parameter gradient, and the parameters
// after three SGD steps: as the all-NCHW graph has them. Not bit for bit:
// the bias gradients sum over NHWC in another order.
TEST(ChannelsLast, TrainingComputesWhatTheNchwGraphComputes) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col): every value is NCHW";
  auto run = [](bool channels_last) {
    return testing::train_three_steps([] { return net(3); }, channels_last, Graph::ParamGrads::kAccumulate);
  };
  testing::expect_same_training(run(true), run(false));
}

TEST(ChannelsLast, InferenceComputesWhatTheNchwGraphComputes) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col): every value is NCHW";
  // Every float value of an inference forward (memory reuse off, so each can be read), in NCHW order.
  auto run = [](LayoutChoice layout, int& channels_last) {
    Context ctx = Context::cpu();
    Graph graph = net(2);
    graph.compile(ctx, {.phase = Phase::kInference, .memory_reuse = MemoryReuse::kOff, .layout = layout});
    fill_synthetic_batch(ctx, graph, 5);
    graph.forward(ctx, Phase::kInference);
    std::vector<std::pair<std::string, std::vector<float>>> values;
    for (const Node& node : graph.nodes()) {
      channels_last += node.channels_last ? 1 : 0;
      if (node.dtype != DType::kFloat32) continue;
      std::vector<float> value = to_vector<float>(ctx, node.value);
      values.emplace_back(node.name, node.channels_last ? nchw_from_channels_last(value, node.shape) : value);
    }
    return values;
  };
  int nhwc_count = 0, nchw_count = 0;
  const auto nhwc = run(LayoutChoice::kNhwc, nhwc_count), nchw = run(LayoutChoice::kNchw, nchw_count);
  EXPECT_GT(nhwc_count, 0);
  EXPECT_EQ(nchw_count, 0);
  ASSERT_EQ(nhwc.size(), nchw.size());
  for (size_t i = 0; i < nhwc.size(); ++i) {
    ASSERT_EQ(nhwc[i].first, nchw[i].first);
    testing::expect_close(nhwc[i].second, nchw[i].second, 1e-5, nhwc[i].first);
  }
}

// Max pooling from NHWC, to NHWC and to NCHW, against the same layer on
// NCHW: windows with ties, -inf and padding, overlapping or not, both
// gradient modes, and an inference plan (no argmax kept).
TEST(ChannelsLast, MaxPoolingOnNhwcMatchesTheNchwPaths) {
  struct Case {
    Pool2d::Window window;
    Shape x;
  };
  const std::vector<Case> cases = {
      {{.kernel = 2, .stride = 2}, Shape{2, 32, 8, 10}},                 // VGG's
      {{.kernel = 3, .stride = 2, .pad = 1}, Shape{1, 16, 9, 11}},       // ResNet's stem, overlapping rows
      {{.kernel = 3, .stride = 2, .ceil_mode = true}, Shape{2, 16, 8, 8}},
      {{.kernel = 3, .stride = 1, .pad = 1}, Shape{1, 48, 5, 6}},
  };
  const float inf = std::numeric_limits<float>::infinity();
  for (const Case& c : cases) {
    for (bool y_nhwc : {true, false}) {
      const std::string what = c.x.str() + " by " + Pool2d("p", Pool2d::Mode::kMax, c.window).describe() +
                               (y_nhwc ? " to NHWC" : " to NCHW");
      Context ctx = Context::cpu();
      Pool2d plain("pool", Pool2d::Mode::kMax, c.window), nhwc("pool", Pool2d::Mode::kMax, c.window);
      testing::LayerHarness ref(ctx, plain, {c.x});
      testing::LayerHarness h(ctx, nhwc, {c.x});
      ASSERT_TRUE(nhwc.can_read_channels_last(0)) << what;
      nhwc.set_channels_last({true}, y_nhwc);
      nhwc.prepare(ctx);
      const Layout y_layout = y_nhwc ? Layout::kNHWC : Layout::kNCHW;
      h.inputs[0] = h.inputs[0].with_layout(Layout::kNHWC), h.input_grads[0] = h.input_grads[0].with_layout(Layout::kNHWC);
      h.output = h.output.with_layout(y_layout), h.output_grad = h.output_grad.with_layout(y_layout);
      const Shape out = ref.output.shape();
      std::mt19937 rng(5);
      std::vector<float> x(static_cast<size_t>(c.x.numel()));
      for (float& v : x) v = rng() % 7 == 0 ? -inf : static_cast<float>(rng() % 3) - 1.0f;  // ties everywhere
      const std::vector<float> dy = testing::random_values(out.numel(), 6);
      auto to_y_layout = [&](const std::vector<float>& v) { return y_nhwc ? channels_last_from_nchw(v, out) : v; };
      ref.write(ref.inputs[0], x);
      ref.write(ref.output_grad, dy);
      h.write(h.inputs[0], channels_last_from_nchw(x, c.x));
      h.write(h.output_grad, to_y_layout(dy));
      ref.forward();
      h.poison(h.output);
      h.forward();
      EXPECT_EQ(h.read(h.output), to_y_layout(ref.read(ref.output))) << what;
      ref.backward();
      h.poison(h.input_grads[0]);
      h.backward();
      EXPECT_EQ(h.read(h.input_grads[0]), channels_last_from_nchw(ref.read(ref.input_grads[0]), c.x)) << what << ": dx written";
      ref.backward({GradMode::kAdd});
      h.backward({GradMode::kAdd});
      EXPECT_EQ(h.read(h.input_grads[0]), channels_last_from_nchw(ref.read(ref.input_grads[0]), c.x)) << what << ": dx added";

      Pool2d inferring("pool", Pool2d::Mode::kMax, c.window);
      inferring.bind(std::vector<Shape>{c.x});
      inferring.set_channels_last({true}, y_nhwc);
      inferring.prepare(ctx, {.phase = Phase::kInference});
      const Tensor y = ctx.allocate(out, DType::kFloat32, MemoryCategory::kActivations).with_layout(y_layout);
      inferring.forward(ctx, {.inputs = h.inputs, .output = y, .params = {}, .phase = Phase::kInference});
      EXPECT_EQ(h.read(y), to_y_layout(ref.read(ref.output))) << what << ": inference plan";
    }
  }
}

// A oneDNN convolution on NHWC values against the same one on NCHW: y, dx
// (written and added), dW and db. 112 x 112 pixels run the backward in NHWC
// too (Note [The backward's layouts on NHWC values]), 12 x 12 in oneDNN's
// own layout; 24 channels leave a partial vector for the bias gradient.
TEST(ChannelsLast, AConvolutionOnNhwcMatchesItselfOnNchw) {
  if (!GLASSBOX_WITH_ONEDNN) GTEST_SKIP() << "built without oneDNN (-DGLASSBOX_CPU_CONV=im2col): no NHWC convolution";
  for (const Shape& x_shape : {Shape{1, 16, 112, 112}, Shape{2, 16, 12, 12}}) {
    Context ctx = Context::cpu();
    Conv2d plain("conv", {.out_channels = 24, .kernel = 3, .pad = 1}), nhwc("conv", {.out_channels = 24, .kernel = 3, .pad = 1});
    testing::LayerHarness ref(ctx, plain, {x_shape});
    testing::LayerHarness h(ctx, nhwc, {x_shape});
    nhwc.set_channels_last({true}, true);
    nhwc.prepare(ctx);
    ctx.reserve_workspace(nhwc.workspace_bytes());
    ref.randomize(7);
    h.copy_values_from(ref);
    const Shape y_shape = ref.output.shape();
    h.inputs[0] = h.inputs[0].with_layout(Layout::kNHWC), h.input_grads[0] = h.input_grads[0].with_layout(Layout::kNHWC);
    h.output = h.output.with_layout(Layout::kNHWC), h.output_grad = h.output_grad.with_layout(Layout::kNHWC);
    h.write(h.inputs[0], channels_last_from_nchw(ref.read(ref.inputs[0]), x_shape));
    h.write(h.output_grad, channels_last_from_nchw(ref.read(ref.output_grad), y_shape));
    const std::string what = x_shape.str() + ": " + nhwc.algorithms();
    ref.forward();
    h.forward();
    testing::expect_close(h.read(h.output), channels_last_from_nchw(ref.read(ref.output), y_shape), 1e-5, what + ": y");
    for (GradMode mode : {GradMode::kWrite, GradMode::kAdd}) {
      ref.backward({mode});
      h.backward({mode});
      testing::expect_close(h.read(h.input_grads[0]), channels_last_from_nchw(ref.read(ref.input_grads[0]), x_shape), 1e-5,
                            what + ": dx");
      for (size_t i = 0; i < 2; ++i) {
        testing::expect_close(h.read(h.param_grads[i]), ref.read(ref.param_grads[i]), 1e-5, what + (i ? ": db" : ": dW"));
      }
    }
  }
}

TEST(ChannelsLast, ALayerRefusesALayoutItCannotWork) {
  Context ctx = Context::cpu();
  Pool2d average("avg", Pool2d::Mode::kAverage, {.kernel = 2, .stride = 2});
  testing::LayerHarness h(ctx, average, {Shape{1, 16, 4, 4}});
  try {
    average.set_channels_last({true}, false);
    FAIL() << "average pooling took an NHWC input";
  } catch (const ShapeError& e) {
    EXPECT_EQ(std::string(e.what()), "avg (AvgPool2d): input 0 cannot be channels-last");
  }
  Pool2d uneven("uneven", Pool2d::Mode::kMax, {.kernel = 2, .stride = 2});
  testing::LayerHarness u(ctx, uneven, {Shape{1, 20, 4, 4}});  // 20 channels: not whole vectors (of kFloatLanes)
  EXPECT_FALSE(uneven.can_read_channels_last(0));

  auto message = [](const std::function<void()>& call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Pool2d max("max", Pool2d::Mode::kMax, {.kernel = 2, .stride = 2});
  EXPECT_EQ(message([&] { max.set_channels_last({true}, true); }),
            "max (MaxPool2d): set_channels_last before its input shapes are known (bind first)");
  testing::LayerHarness m(ctx, max, {Shape{1, 16, 4, 4}});
  EXPECT_EQ(message([&] { max.set_channels_last({true, true}, true); }),
            "max (MaxPool2d): set_channels_last with 2 input layout(s), the layer has 1 input(s)");
  EXPECT_EQ(message([&] { max.set_channels_last({false}, true); }),
            "max (MaxPool2d): its output cannot be channels-last with these inputs");
  max.set_channels_last({true}, true);
  max.prepare(ctx);
  EXPECT_EQ(message([&] { m.forward(); }), "max (MaxPool2d): input 0 is NCHW, the layer was prepared for NHWC");
  EXPECT_EQ(m.inputs[0].with_layout(Layout::kNHWC).str(), "float32 (1, 16, 4, 4), NHWC on cpu");
  ReLU relu("relu");
  testing::LayerHarness r(ctx, relu, {Shape{1, 16, 4, 4}});
  EXPECT_EQ(message([&] { relu.set_channels_last({true}, false); }),
            "relu (ReLU): this layer's inputs and output share one layout");

  if (!GLASSBOX_WITH_ONEDNN) return;  // the convolution below needs oneDNN to take NHWC at all
  Conv2d conv("conv", {.out_channels = 16, .kernel = 3, .pad = 1});
  testing::LayerHarness c(ctx, conv, {Shape{1, 16, 6, 6}});
  conv.set_channels_last({true}, true);
  conv.pin_cpu_path(Conv2d::CpuPath::kGlassbox);  // a path that reads NCHW only
  EXPECT_EQ(message([&] { conv.prepare(ctx); }),
            "conv (Conv2d): channels-last values need oneDNN's convolution, which this layer no longer takes");
}

}  // namespace
}  // namespace glassbox
