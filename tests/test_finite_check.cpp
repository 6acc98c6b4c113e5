// tests/test_finite_check.cpp: a step whose loss is not finite is reported by
// step number and by where the first non-finite value appeared, never
// carried on from (graph/finite_check.h).
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "data/synthetic.h"
#include "graph/builder.h"
#include "graph/finite_check.h"
#include "nets/registry.h"
#include "optim/sgd.h"
#include "tensor/copy.h"
#include "tests/support/data_files.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct LeNetRun {
  Context ctx = Context::cpu();
  Graph graph = find_net("LeNet").build(8);
  LeNetRun() {
    graph.compile(ctx);
    fill_synthetic_batch(ctx, graph, 10);
  }
  // One weight of conv2 infinite.
  void spoil_conv2_weight() {
    const Tensor& weight = graph.node("conv2").params[0];
    std::vector<float> values = to_vector<float>(ctx, weight);
    values[7] = std::numeric_limits<float>::infinity();
    from_vector<float>(ctx, values, weight);
  }
  std::string first_error(int steps) {
    for (int step = 1; step <= steps; ++step) {
      graph.forward(ctx);
      try {
        checked_loss(ctx, graph, step);
      } catch (const NumericalError& e) {
        return e.what();
      }
    }
    return "(no error)";
  }
};

TEST(FiniteCheck, AHealthyStepPassesAndDescribesNothing) {
  LeNetRun run;
  EXPECT_EQ(run.first_error(2), "(no error)");
  EXPECT_EQ(describe_non_finite(run.ctx, run.graph), "");
}

TEST(FiniteCheck, NonFiniteDataIsTracedToTheInput) {
  LeNetRun run;
  std::vector<float> images = to_vector<float>(run.ctx, run.graph.input("images"));
  images[100] = kNaN;
  from_vector<float>(run.ctx, images, run.graph.input("images"));
  EXPECT_EQ(run.first_error(3), "step 1: the loss is nan; first non-finite output: input 'images'");
}

TEST(FiniteCheck, ANonFiniteParameterIsNamedWithTheFirstLayerItSpoils) {
  LeNetRun run;
  run.spoil_conv2_weight();
  EXPECT_EQ(run.first_error(3),
            "step 1: the loss is nan; first non-finite output: conv2 (Conv2d); non-finite parameters: conv2.weight");
}

// In an fp16 graph the message also names fp16's range, the likely cause.
TEST(FiniteCheck, ANonFiniteValueOfAnFp16RunNamesFp16sRange) {
  LeNetRun run;
  run.spoil_conv2_weight();
  run.graph.forward(run.ctx);
  run.ctx.set_precision(Precision::kFp16);  // what the note reads; the graph's values stay fp32 here
  EXPECT_EQ(testing::message_of<NumericalError>([&] { check_loss_value(run.ctx, run.graph, 3, kNaN); }),
            "step 3: the loss is nan; first non-finite output: conv2 (Conv2d); non-finite parameters: conv2.weight; "
            "fp16 holds values up to 65504, and bf16 has fp32's range");
}

TEST(FiniteCheck, ADivergingRunStopsAtTheFirstNonFiniteStep) {
  // The example: SGD at a learning rate of 10 sends LeNet's loss to
  // NaN within a few steps; the run must stop there, naming the step.
  LeNetRun run;
  Sgd sgd(run.ctx, run.graph.parameters(), run.graph.gradients(), {.lr = 10.0f});
  std::string error = "(no error)";
  int64_t step = 0;
  while (error == "(no error)" && step < 50) {
    run.graph.zero_grad(run.ctx);
    run.graph.forward(run.ctx);
    run.graph.backward(run.ctx);
    sgd.step(run.ctx);
    try {
      checked_loss(run.ctx, run.graph, ++step);
    } catch (const NumericalError& e) {
      error = e.what();
    }
  }
  const std::string prefix = cat("step ", step, ": the loss is ");
  EXPECT_EQ(error.substr(0, prefix.size()), prefix) << error;
  EXPECT_NE(error.find("non-finite parameters: conv1.weight"), std::string::npos) << error;
  EXPECT_GT(step, 1) << "the first step, before any update, is finite";
}

// A loss read after the step's update, which has left every value finite
// (an fp16 overflow the loss scaler let through): the message says so and
// how to find the place, rather than naming none.
TEST(FiniteCheck, ALossWhoseCauseTheUpdateRemovedSaysHowToFindIt) {
  LeNetRun run;
  run.graph.forward(run.ctx);
  const float inf = std::numeric_limits<float>::infinity();
  try {
    check_loss_value(run.ctx, run.graph, 4, inf);
    FAIL() << "an infinite loss passed";
  } catch (const NumericalError& e) {
    EXPECT_EQ(std::string(e.what()),
              "step 4: the loss is inf; a forward with the weights as they are now is finite: --check-numerics "
              "checks every value at the step itself");
  }
  run.ctx.set_precision(Precision::kFp16);
  try {
    check_loss_value(run.ctx, run.graph, 4, inf);
    FAIL() << "an infinite loss passed";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("; fp16 holds values up to 65504, and bf16 has fp32's range"),
              std::string::npos)
        << e.what();
  }
}

// glassbox train --check-numerics: after a whole step every output, every
// activation gradient and every parameter gradient is looked at; that needs
// them all still in memory.
TEST(FiniteCheck, AWholeStepIsCheckedOutputsGradientsAndParameterGradients) {
  Context ctx = Context::cpu();
  Graph reused = find_net("LeNet").build(4);
  reused.compile(ctx);
  try {
    describe_non_finite_step(ctx, reused);
    FAIL() << "checked a step whose values share memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("describe_non_finite_step: the graph shares memory between values "
                                         "(MemoryReuse::kOn)"),
              std::string::npos)
        << e.what();
  }

  Graph graph = find_net("LeNet").build(4);
  CompileOptions options;
  options.memory_reuse = MemoryReuse::kOff;
  graph.compile(ctx, options);
  fill_synthetic_batch(ctx, graph, 10);
  graph.zero_grad(ctx);
  graph.forward(ctx);
  graph.backward(ctx);
  EXPECT_EQ(describe_non_finite_step(ctx, graph), "");
  // A gradient that overflowed in backward, before it reached any weight:
  graph.node("relu3").grad.data<float>()[5] = std::numeric_limits<float>::infinity();
  graph.node("conv1").param_grads[0].data<float>()[0] = kNaN;
  EXPECT_EQ(describe_non_finite_step(ctx, graph),
            "first non-finite gradient in backward order: the gradient of relu3 (ReLU); "
            "non-finite parameter gradients: conv1.weight gradient");
  EXPECT_EQ(describe_non_finite_step(ctx, graph, StepGradients::kParameters),
            "non-finite parameter gradients: conv1.weight gradient")
      << "an applied fp16 step: its masked activation gradients may overflow";
  EXPECT_EQ(describe_non_finite_step(ctx, graph, StepGradients::kNone), "") << "an overflow the loss scaler skipped";
  graph.node("fc4").value.data<float>()[0] = kNaN;
  EXPECT_EQ(describe_non_finite_step(ctx, graph).substr(0, 40), "first non-finite output: fc4 (Linear); f");
}

// Note [A ReLU keeps a NaN]: every ReLU path hands a NaN on, so that a NaN
// image reaches the loss, which the check refuses, naming the input. Each
// network below takes the NaN through one path (which one a device takes
// depends on its fusion rules; each case names the path it is for):
//   "relu": the ReLU layer's own pass (fusion off);
//   "conv_relu": a convolution's fused bias and ReLU;
//   "linear_relu": a linear layer's fused bias and ReLU;
//   "bn_relu": batch norm's fused ReLU (tf32, bf16 and fp16: cuDNN's fused
//     Ex ops on a GPU, where their values are NHWC by default);
//   "bn_add_relu": batch norm's fused residual add and ReLU (likewise);
//   "add_relu": a residual add's fused ReLU (on NCHW values, where a GPU's
//     batch norm takes no add: in fp32 and in bf16, Glassbox's kernel in
//     both types).
struct NanPath {
  const char* name;
  Precision precision;
  bool fusion;
  LayoutChoice layout = LayoutChoice::kAuto;
};

Graph nan_path_net(std::string_view path) {
  GraphBuilder g;
  Value x = g.input("images", {4, 8, 6, 6});
  const Value labels = g.input("labels", {4}, DType::kInt32);
  if (path == "linear_relu") {
    x = g.relu(g.linear(g.flatten(x), {.out_features = 16}, "fc1"), "relu1");
  } else if (path == "relu" || path == "conv_relu") {
    x = g.relu(g.conv(x, {.out_channels = 8, .kernel = 3, .pad = 1}, "conv1"), "relu1");
  } else if (path == "bn_relu") {
    x = g.relu(g.batch_norm(g.conv(x, {.out_channels = 8, .kernel = 3, .pad = 1, .bias = false}, "conv1"), {}, "bn1"),
               "relu1");
  } else {  // bn_add_relu, add_relu
    const Value z = g.relu(g.conv(x, {.out_channels = 8, .kernel = 3, .pad = 1}, "conv0"), "relu0");
    const Value y =
        g.batch_norm(g.conv(z, {.out_channels = 8, .kernel = 3, .pad = 1, .bias = false}, "conv1"), {}, "bn1");
    x = g.relu(g.add({y, z}, "add1"), "relu1");
  }
  if (path != "linear_relu") x = g.flatten(x);
  return std::move(g).build(g.softmax_cross_entropy(g.linear(x, {.out_features = 5}, "fc_out"), labels));
}

class ReluKeepsNanTest : public testing::DeviceTest {};

TEST_P(ReluKeepsNanTest, ANanImageReachesTheLossThroughEveryReluPath) {
  const NanPath paths[] = {{"relu", Precision::kFp32, false},
                           {"conv_relu", Precision::kFp32, true},
                           {"linear_relu", Precision::kFp32, true},
                           {"bn_relu", Precision::kTf32, true},
                           {"bn_relu", Precision::kBf16, true},
                           {"bn_relu", Precision::kFp16, true},
                           {"bn_add_relu", Precision::kTf32, true},
                           {"bn_add_relu", Precision::kBf16, true},
                           {"bn_add_relu", Precision::kFp16, true},
                           {"add_relu", Precision::kFp32, true},
                           {"add_relu", Precision::kBf16, true, LayoutChoice::kNchw}};
  for (const NanPath& path : paths) {
    Context& c = ctx();
    Graph graph = nan_path_net(path.name);
    graph.compile(c, {.precision = path.precision, .layout = path.layout, .fusion = path.fusion});
    fill_synthetic_batch(c, graph, 5);
    std::vector<float> images = to_vector<float>(c, graph.input("images"));
    images[40] = kNaN;
    from_vector<float>(c, images, graph.input("images"));
    graph.forward(c);
    const std::string error = testing::message_of<NumericalError>([&] { checked_loss(c, graph, 1); });
    EXPECT_EQ(error.substr(0, error.find(';')), "step 1: the loss is nan")
        << path.name << " " << flag_name_of(path.precision) << ": " << error;
  }
}

GLASSBOX_INSTANTIATE_ON_DEVICES(ReluKeepsNanTest);

}  // namespace
}  // namespace glassbox
