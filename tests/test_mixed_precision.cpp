// tests/test_mixed_precision.cpp: bf16 and fp16 graphs on the CPU (Note
// [Mixed precision], graph/mixed_precision.h): what is stored in 16 bits and
// what stays fp32; every layer's forward and backward against fp32 within a
// stated tolerance; the loss scale reaching the gradients; fp16's skipped
// step on overflow; and a loss scale that survives a checkpoint.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>

#include "data/data_spec.h"
#include "data/synthetic.h"
#include "graph/builder.h"
#include "graph/memory_plan.h"
#include "layers/subsample_pad.h"
#include "nets/nets.h"
#include "optim/loss_scaler.h"
#include "optim/train_step.h"
#include "tensor/convert.h"
#include "tensor/copy.h"
#include "tensor/safetensors.h"
#include "tests/support/checks.h"
#include "tests/support/data_files.h"
#include "tests/support/devices.h"
#include "tests/support/layout_runs.h"
#include "tests/support/sanitizers.h"
#include "tests/support/temp_dir.h"
#include "train/trainer.h"

namespace glassbox {
namespace {

// Every kind of layer an image network has, small: convolutions (grouped
// and not, with and without bias), batch norm, ReLU, max and average
// pooling, LRN, a residual add, a concatenation, global pooling, dropout,
// flatten, linear and the loss.
Graph every_layer(int batch) {
  GraphBuilder g;
  Value x = g.input("images", {batch, 3, 12, 12});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  x = g.relu(g.conv(x, {.out_channels = 8, .kernel = 3, .pad = 1}, "conv1"), "relu1");
  x = g.lrn(x, {.size = 3}, "lrn1");
  const Value a = g.relu(g.batch_norm(g.conv(x, {.out_channels = 8, .kernel = 3, .pad = 1, .bias = false}, "conv2"),
                                      {}, "bn2"),
                         "relu2");
  const Value b = g.conv(x, {.out_channels = 8, .kernel = 3, .pad = 1, .groups = 8}, "depthwise");
  x = g.add({a, b}, "add");
  x = g.max_pool(x, {.kernel = 2, .stride = 2}, "pool1");  // 6x6
  const Value c = g.conv(x, {.out_channels = 4, .kernel = 1}, "conv3");
  const Value d = g.avg_pool(x, {.kernel = 3, .stride = 1, .pad = 1}, "pool2");
  x = g.concat({c, d}, "concat");  // 12 channels
  const Value pooled = g.global_avg_pool(x, "gap");
  x = g.dropout(g.flatten(x, "flatten"), {.p = 0.25f}, "drop");
  x = g.linear(x, {.out_features = 10}, "fc");
  x = g.add({x, g.linear(g.flatten(pooled, "flatten2"), {.out_features = 10}, "fc2")}, "logits");
  return std::move(g).build(g.softmax_cross_entropy(x, labels));
}

const NetSpec kEveryLayer{"EveryLayer", "every image layer, small (tests)", Shape{3, 12, 12}, 10, 4, 4, every_layer};

struct Compiled {
  Context ctx;
  Graph graph;
  Compiled(const NetSpec& net, int batch, Precision precision, Device device = Device::cpu())
      : ctx(Context::on(device, 5)), graph(net.build(batch)) {
    graph.compile(ctx, {.precision = precision, .seed = 3, .memory_reuse = MemoryReuse::kOff});
    fill_synthetic_batch(ctx, graph, net.classes);
  }
};

using testing::relative_error;

TEST(MixedPrecision, StoresValuesGradientsAndWeightsIn16BitsAndTheRestInFp32) {
  for (Precision precision : {Precision::kBf16, Precision::kFp16}) {
    Compiled run(kEveryLayer, 4, precision);
    const DType half = value_dtype(precision);
    const Graph& graph = run.graph;
    for (const Node& node : graph.nodes()) {
      SCOPED_TRACE(node.name);
      if (node.is_input()) {
        EXPECT_EQ(node.value.dtype(), node.dtype);  // the images stay fp32, the labels int32
      } else if (node.layer->is_loss()) {
        EXPECT_EQ(node.value.dtype(), DType::kFloat32);
      } else {
        EXPECT_EQ(node.value.dtype(), half);
        EXPECT_EQ(node.grad.dtype(), half);
        for (const Tensor& p : node.params) {
          EXPECT_EQ(p.dtype(), node.layer->keeps_fp32_parameters() ? DType::kFloat32 : half) << p.name();
          // Each 16-bit weight starts where cuBLASLt's and cuDNN's kernels
          // assume, as the fp32 master does.
          EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p.raw()) % kPlanAlignment, 0u) << p.name();
        }
        for (const Tensor& g : node.param_grads) EXPECT_EQ(g.dtype(), DType::kFloat32) << g.name();
      }
    }
    EXPECT_TRUE(graph.node("bn2").layer->keeps_fp32_parameters());
    EXPECT_EQ(graph.parameters().dtype(), DType::kFloat32);
    EXPECT_EQ(graph.gradients().dtype(), DType::kFloat32);
    ASSERT_TRUE(graph.working_parameters().defined());
    EXPECT_EQ(graph.working_parameters().dtype(), half);
    EXPECT_EQ(graph.working_parameters().numel(), graph.parameters().numel());
    for (const NamedTensor& t : graph.named_state()) EXPECT_EQ(t.tensor.dtype(), DType::kFloat32) << t.name;
    // The working copy is the master rounded, element for element.
    const std::vector<float> master = to_vector<float>(run.ctx, graph.parameters());
    const std::vector<float> working = to_float_vector(run.ctx, graph.working_parameters());
    for (size_t i = 0; i < master.size(); ++i) ASSERT_EQ(working[i], round_to_16_bit(master[i], half)) << i;
    // Half the bytes for every value, as the plan counts them.
    Compiled fp32(kEveryLayer, 4, Precision::kFp32);
    EXPECT_LT(graph.memory_plan().values_without_reuse, fp32.graph.memory_plan().values_without_reuse * 6 / 10);
  }
  Compiled fp32(kEveryLayer, 4, Precision::kFp32);
  EXPECT_FALSE(fp32.graph.working_parameters().defined());
}

// Note [Mixed precision]'s promise, layer by layer: one layer between fp32
// graph inputs and a linear head, so that it reads the same inputs in both
// graphs (a whole network's rounding would move a max-pooling's argmax or a
// small batch's statistics, and compare those instead of the layer). Its
// output, its input gradients and its parameter gradients in a 16-bit graph
// are the fp32 graph's within a tolerance, measured as the largest
// difference over the largest fp32 magnitude of that tensor. bf16 keeps 8
// significant bits (a rounding is within 2^-8 of the value), fp16 11 (2^-11);
// the layer's output is rounded once and its weights once, and its gradients
// come back through the head's 16-bit weights and activations, so the
// tolerances allow a few roundings: 2^-6 and 2^-9 for values, twice that for
// gradients.
struct Tolerance {
  double values;
  double gradients;
};
Tolerance tolerance_of(Precision precision) {
  return precision == Precision::kBf16 ? Tolerance{0x1p-6, 0x1p-5} : Tolerance{0x1p-9, 0x1p-8};
}

constexpr int kBatch = 4;

// images (and "more", for the layers of two inputs) -> layer -> flatten -> linear -> loss.
using LayerUnderTest = std::function<Value(GraphBuilder&, Value images, Value more)>;
enum class Inputs { kOne, kTwo };

Graph one_layer(const LayerUnderTest& layer, Shape input, Inputs inputs) {
  GraphBuilder g;
  const Value images = g.input("images", input);
  const Value more = inputs == Inputs::kTwo ? g.input("more", input) : Value{};
  const Value labels = g.input("labels", {kBatch}, DType::kInt32);
  Value x = layer(g, images, more);
  if (g.shape(x).rank() > 2) x = g.flatten(x, "flatten");
  x = g.linear(x, {.out_features = 10}, "head");
  return std::move(g).build(g.softmax_cross_entropy(x, labels));
}

// Images whose values differ within every (H, W) plane even once rounded to
// bfloat16 or float16, and which neither type holds exactly: (k + 0.2) / 128
// for k a distinct integer in [-128, 127] per position of a plane (36 * 7 <
// 256), shifted per image and channel. Values 1/128 apart stay apart through
// a rounding step of at most 1/256. For max pooling: on a GPU it pools the
// 16-bit images (Pool2d::computes_16_bit), and two values rounded to one would
// tie, where cuDNN documents no rule for which one takes the gradient.
void fill_distinct_images(Context& ctx, const Graph& graph) {
  const Tensor& images = graph.input("images");
  const Shape& s = images.shape();
  ASSERT_LE(s[2] * s[3] * 7, 256) << "a plane too large for distinct values";
  std::vector<float> values(static_cast<size_t>(images.numel()));
  size_t i = 0;
  for (int64_t n = 0; n < s[0]; ++n) {
    for (int64_t c = 0; c < s[1]; ++c) {
      for (int64_t at = 0; at < s[2] * s[3]; ++at) {
        const int64_t k = (at * 7 + c * 3 + n * 5) % 256 - 128;
        values[i++] = (static_cast<float>(k) + 0.2f) / 128.0f;
      }
    }
  }
  from_vector<float>(ctx, values, images);
}

// The 16-bit graph runs on `device` (on a CUDA device its layers compute in
// 16 bits where they can, Note [16-bit values in a layer]); the fp32
// reference runs on the CPU. `fill_images`, where set, replaces the
// synthetic images in both graphs.
using FillImages = std::function<void(Context&, const Graph&)>;
void expect_layer_close_to_fp32(const std::string& what, const LayerUnderTest& layer,
                                Shape input = {kBatch, 8, 6, 6}, Inputs inputs = Inputs::kOne,
                                Device device = Device::cpu(), const FillImages& fill_images = {}) {
  std::vector<std::string> names = {"images"};
  if (inputs == Inputs::kTwo) names.push_back("more");
  for (Precision precision : {Precision::kBf16, Precision::kFp16}) {
    SCOPED_TRACE(cat(what, " ", flag_name_of(precision), " on ", device.str()));
    struct Run {
      Context ctx;
      Graph graph;
    };
    Run reference{.ctx = Context::cpu(5), .graph = one_layer(layer, input, inputs)};
    Run mixed{.ctx = Context::on(device, 5), .graph = one_layer(layer, input, inputs)};
    // fp16 runs at a loss scale, as it trains; its gradients are divided back below.
    const float scale = precision == Precision::kFp16 ? 1024.0f : 1.0f;
    for (Run* run : {&reference, &mixed}) {
      run->graph.compile(run->ctx, {.precision = run == &mixed ? precision : Precision::kFp32,
                                    .seed = 3,
                                    .memory_reuse = MemoryReuse::kOff,
                                    .input_gradients = names});
      fill_synthetic_batch(run->ctx, run->graph, 10);
      if (fill_images) fill_images(run->ctx, run->graph);
      if (run == &mixed) run->graph.set_loss_scale(scale);
      run->graph.forward(run->ctx, Phase::kTraining);
      run->graph.backward(run->ctx, Graph::ParamGrads::kReplace);
    }
    const Tolerance tolerance = tolerance_of(precision);
    const auto divided = [&](std::vector<float> v) {
      for (float& x : v) x /= scale;
      return v;
    };
    const auto first_layer = [](const Graph& graph) -> const Node& {
      return *std::find_if(graph.nodes().begin(), graph.nodes().end(), [](const Node& n) { return !n.is_input(); });
    };
    const Node& tested = first_layer(reference.graph);
    const Node& other = first_layer(mixed.graph);
    EXPECT_EQ(other.value.dtype(), value_dtype(precision));
    // Read in NCHW order: on a GPU the 16-bit graph stores values NHWC and
    // filters KRSC where its layers take them (Note [Channels-last values]),
    // and the CPU's fp32 reference plans other layers channels-last.
    const std::vector<float> expected = testing::read_nchw(reference.ctx, tested.value);
    const std::vector<float> got = testing::read_nchw(mixed.ctx, other.value);
    EXPECT_LE(relative_error(expected, got), tolerance.values) << tested.name << " output";
    EXPECT_NE(expected, got) << "16-bit storage rounded nothing";
    for (const std::string& name : names) {
      const std::vector<float> a = testing::read_nchw(reference.ctx, reference.graph.input_gradient(name));
      EXPECT_LE(relative_error(a, divided(testing::read_nchw(mixed.ctx, mixed.graph.input_gradient(name)))),
                tolerance.gradients)
          << "gradient of " << name;
    }
    for (size_t j = 0; j < tested.param_grads.size(); ++j) {
      EXPECT_LE(relative_error(testing::read_nchw(reference.ctx, tested.param_grads[j]),
                               divided(testing::read_nchw(mixed.ctx, other.param_grads[j]))),
                tolerance.gradients)
          << tested.param_grads[j].name();
    }
  }
}

void expect_every_image_layer_close_to_fp32(Device device) {
  const Shape images{kBatch, 8, 6, 6};
  expect_layer_close_to_fp32("conv", [](GraphBuilder& g, Value x, Value) {
    return g.conv(x, {.out_channels = 8, .kernel = 3, .pad = 1}, "conv");
  }, images, Inputs::kOne, device);
  expect_layer_close_to_fp32("strided conv without bias", [](GraphBuilder& g, Value x, Value) {
    return g.conv(x, {.out_channels = 6, .kernel = 3, .stride = 2, .bias = false}, "conv");
  }, images, Inputs::kOne, device);
  expect_layer_close_to_fp32("1x1 conv", [](GraphBuilder& g, Value x, Value) {
    return g.conv(x, {.out_channels = 4, .kernel = 1}, "conv");
  }, images, Inputs::kOne, device);
  expect_layer_close_to_fp32("depthwise conv", [](GraphBuilder& g, Value x, Value) {
    return g.conv(x, {.out_channels = 8, .kernel = 3, .pad = 1, .groups = 8}, "conv");
  }, images, Inputs::kOne, device);
  expect_layer_close_to_fp32("batch norm", [](GraphBuilder& g, Value x, Value) { return g.batch_norm(x, {}, "bn"); },
                             images, Inputs::kOne, device);
  expect_layer_close_to_fp32("relu", [](GraphBuilder& g, Value x, Value) { return g.relu(x, "relu"); }, images,
                             Inputs::kOne, device);
  expect_layer_close_to_fp32("max pool", [](GraphBuilder& g, Value x, Value) {
    return g.max_pool(x, {.kernel = 3, .stride = 2}, "pool");
  }, images, Inputs::kOne, device, fill_distinct_images);
  expect_layer_close_to_fp32("average pool", [](GraphBuilder& g, Value x, Value) {
    return g.avg_pool(x, {.kernel = 3, .stride = 1, .pad = 1}, "pool");
  }, images, Inputs::kOne, device);
  expect_layer_close_to_fp32("global average pool", [](GraphBuilder& g, Value x, Value) {
    return g.global_avg_pool(x, "pool");
  }, images, Inputs::kOne, device);
  expect_layer_close_to_fp32("lrn", [](GraphBuilder& g, Value x, Value) { return g.lrn(x, {.size = 3}, "lrn"); },
                             images, Inputs::kOne, device);
  // The GPU's dropout masks come from cuDNN's generator, not the CPU's: they
  // differ from the reference's, so dropout is compared on the CPU only.
  if (!device.is_cuda()) {
    expect_layer_close_to_fp32("dropout", [](GraphBuilder& g, Value x, Value) {
      return g.dropout(x, {.p = 0.25f}, "drop");
    });
  }
  expect_layer_close_to_fp32(
      "add", [](GraphBuilder& g, Value x, Value y) { return g.add({x, y}, "add"); }, images, Inputs::kTwo, device);
  expect_layer_close_to_fp32(
      "concat", [](GraphBuilder& g, Value x, Value y) { return g.concat({x, y}, "concat"); }, images,
      Inputs::kTwo, device);
  expect_layer_close_to_fp32("subsample and pad", [](GraphBuilder& g, Value x, Value) {
    return g.append(std::make_unique<SubsamplePad>("shortcut", SubsamplePad::Options{.stride = 2, .out_channels = 16,
                                                                                     .first_channel = 4}),
                    {x});
  }, images, Inputs::kOne, device);
  expect_layer_close_to_fp32("linear", [](GraphBuilder& g, Value x, Value) {
    return g.linear(x, {.out_features = 12}, "fc");
  }, {kBatch, 20}, Inputs::kOne, device);
}

TEST(MixedPrecision, EveryImageLayerMatchesFp32WithinTheTolerance) {
  expect_every_image_layer_close_to_fp32(Device::cpu());
}

// The same on a GPU, against the CPU's fp32: the layers that compute in 16
// bits there (cuDNN and cuBLAS with fp32 accumulation) and those staged.
TEST(MixedPrecision, EveryImageLayerOnCudaMatchesFp32WithinTheTolerance) {
  GLASSBOX_REQUIRE_CUDA();
  expect_every_image_layer_close_to_fp32(Device::cuda(0));
}

// A whole language model, embedding and LSTM included: its steps are smooth
// (no argmax, no batch statistics), so the 16-bit graph stays within the
// tolerances end to end.
void expect_language_model_close_to_fp32(Device device) {
  for (Precision precision : {Precision::kBf16, Precision::kFp16}) {
    SCOPED_TRACE(cat(flag_name_of(precision), " on ", device.str()));
    const NetSpec net = find_net("LSTMSmall");
    Compiled reference(net, 2, Precision::kFp32);
    Compiled mixed(net, 2, precision, device);
    const float scale = precision == Precision::kFp16 ? 1024.0f : 1.0f;
    mixed.graph.set_loss_scale(scale);
    for (Compiled* run : {&reference, &mixed}) {
      run->graph.forward(run->ctx, Phase::kTraining);
      run->graph.backward(run->ctx, Graph::ParamGrads::kReplace);
    }
    const Tolerance tolerance = tolerance_of(precision);
    const std::vector<Node>& a = reference.graph.nodes();
    const std::vector<Node>& b = mixed.graph.nodes();
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].is_input()) continue;
      SCOPED_TRACE(a[i].name);
      EXPECT_LE(relative_error(to_float_vector(reference.ctx, a[i].value), to_float_vector(mixed.ctx, b[i].value)),
                tolerance.values);
      for (size_t j = 0; j < a[i].param_grads.size(); ++j) {
        std::vector<float> grad = to_vector<float>(mixed.ctx, b[i].param_grads[j]);
        for (float& g : grad) g /= scale;
        EXPECT_LE(relative_error(to_vector<float>(reference.ctx, a[i].param_grads[j]), grad), tolerance.gradients)
            << a[i].param_grads[j].name();
      }
    }
  }
}

TEST(MixedPrecision, LanguageModelMatchesFp32WithinTheTolerance) {
  expect_language_model_close_to_fp32(Device::cpu());
}

// The same on a GPU, against the CPU's fp32: the embedding and the loss
// staged, the LSTM staged too, on cuDNN's weight space from its fp32 master
// weights (Lstm::keeps_fp32_parameters), in TF32 math.
TEST(MixedPrecision, LanguageModelOnCudaMatchesFp32WithinTheTolerance) {
  GLASSBOX_REQUIRE_CUDA();
  expect_language_model_close_to_fp32(Device::cuda(0));
}

// The loss scale multiplies every gradient backward writes, in fp32 too; a
// power of two does so exactly.
TEST(MixedPrecision, TheLossScaleMultipliesEveryGradient) {
  Compiled plain(kEveryLayer, 4, Precision::kFp32);
  Compiled scaled(kEveryLayer, 4, Precision::kFp32);
  scaled.graph.set_loss_scale(8.0f);
  EXPECT_EQ(scaled.graph.loss_scale(), 8.0f);
  for (Compiled* run : {&plain, &scaled}) {
    run->graph.forward(run->ctx, Phase::kTraining);
    run->graph.backward(run->ctx, Graph::ParamGrads::kReplace);
  }
  EXPECT_EQ(plain.graph.loss(plain.ctx), scaled.graph.loss(scaled.ctx));  // the loss itself is not scaled
  std::vector<float> expected = to_vector<float>(plain.ctx, plain.graph.gradients());
  for (float& g : expected) g *= 8.0f;
  EXPECT_EQ(to_vector<float>(scaled.ctx, scaled.graph.gradients()), expected);

  EXPECT_EQ(testing::message_of<ConfigError>([&] { scaled.graph.set_loss_scale(0.0f); }),
            "set_loss_scale: the loss scale must be positive and finite, got 0");
  EXPECT_THROW(scaled.graph.set_loss_scale(std::numeric_limits<float>::infinity()), ConfigError);
  Graph uncompiled = kEveryLayer.build(4);
  EXPECT_EQ(testing::message_of<Error>([&] { uncompiled.set_loss_scale(2.0f); }),
            "set_loss_scale: the graph is not compiled; call compile(ctx) first");
}

// fp16 with a scale so large that the gradients overflow: that step's
// update is skipped (weights and momentum as they were), the scale halves,
// and the next step, at a scale that fits, applies.
TEST(MixedPrecision, AnOverflowingStepIsSkippedAndHalvesTheScale) {
  Compiled run(kEveryLayer, 4, Precision::kFp16);
  Sgd sgd(run.ctx, run.graph.parameters(), run.graph.gradients(), {.lr = 0.01f}, run.graph.working_parameters());
  LossScaler scaler(run.ctx, {.initial = 1024.0f, .growth_interval = 1000});
  train_step(run.ctx, run.graph, sgd, nullptr, &scaler);
  EXPECT_FALSE(scaler.last_step_skipped());
  const std::vector<float> before = to_vector<float>(run.ctx, run.graph.parameters());
  const std::vector<float> momentum = to_vector<float>(run.ctx, sgd.velocity());

  scaler.restore({.scale = 0x1p120f, .clean_steps = 5, .skipped_steps = 0});
  train_step(run.ctx, run.graph, sgd, nullptr, &scaler);
  EXPECT_TRUE(scaler.last_step_skipped());
  EXPECT_EQ(scaler.state().scale, 0x1p119f);
  EXPECT_EQ(scaler.state().clean_steps, 0);
  EXPECT_EQ(scaler.state().skipped_steps, 1);
  EXPECT_EQ(to_vector<float>(run.ctx, run.graph.parameters()), before);
  EXPECT_EQ(to_vector<float>(run.ctx, sgd.velocity()), momentum);
  EXPECT_TRUE(std::isfinite(run.graph.loss(run.ctx)));  // the loss is fp32 and unscaled: it did not overflow

  scaler.restore({.scale = 1024.0f, .clean_steps = 0, .skipped_steps = 1});
  train_step(run.ctx, run.graph, sgd, nullptr, &scaler);
  EXPECT_FALSE(scaler.last_step_skipped());
  EXPECT_EQ(scaler.state().skipped_steps, 1);
  EXPECT_NE(to_vector<float>(run.ctx, run.graph.parameters()), before);
  // The update rewrote the working copy: the master, rounded.
  const std::vector<float> master = to_vector<float>(run.ctx, run.graph.parameters());
  const std::vector<float> working = to_float_vector(run.ctx, run.graph.working_parameters());
  for (size_t i = 0; i < master.size(); ++i) ASSERT_EQ(working[i], round_to_16_bit(master[i], DType::kFloat16)) << i;
}

// cuDNN has no bfloat16 kernels before compute capability 8.0: such a GPU
// refuses bf16 when the graph's context is set to it, naming the way out.
TEST(MixedPrecision, Bf16NeedsAGpuOfComputeCapabilityEight) {
  EXPECT_EQ(precision_refusal(Precision::kBf16, 7, 5, ""),
            "--precision bf16 needs a GPU of compute capability 8.0 or later (Ampere and after), where cuDNN and "
            "cuBLAS have bfloat16 kernels; this one is 7.5: use --precision fp16");
  EXPECT_EQ(precision_refusal(Precision::kBf16, 8, 0, ""), "");
  EXPECT_EQ(precision_refusal(Precision::kBf16, 9, 0, ""), "");
  for (Precision other : {Precision::kFp32, Precision::kFp16}) {
    EXPECT_EQ(precision_refusal(other, 7, 0, ""), "") << flag_name_of(other);
  }
}

// tf32 that would compute in fp32 is refused rather than run under tf32's
// name: below compute capability 8.0 (no TF32 tensor cores), or where
// NVIDIA_TF32_OVERRIDE=0 turns TF32 off in cuBLAS and cuDNN.
TEST(MixedPrecision, Tf32IsRefusedWhereItWouldComputeInFp32) {
  EXPECT_EQ(precision_refusal(Precision::kTf32, 7, 0, ""),
            "--precision tf32 needs a GPU of compute capability 8.0 or later (Ampere and after), which has TF32 "
            "tensor cores; this one is 7.0 and would compute in fp32: use --precision fp32");
  EXPECT_EQ(precision_refusal(Precision::kTf32, 9, 0, "0"),
            "--precision tf32, but NVIDIA_TF32_OVERRIDE=0 in the environment turns TF32 off in cuBLAS and cuDNN, "
            "which would compute in fp32: unset it, or use --precision fp32");
  EXPECT_EQ(precision_refusal(Precision::kTf32, 9, 0, ""), "");
  EXPECT_EQ(precision_refusal(Precision::kTf32, 8, 0, "1"), "") << "only 0 turns TF32 off";
  for (Precision other : {Precision::kFp32, Precision::kBf16, Precision::kFp16}) {
    EXPECT_EQ(precision_refusal(other, 9, 0, "0"), "") << flag_name_of(other);
  }
}

TEST(MixedPrecision, AnFp16StepNeedsALossScalerAndOnlyFp16TakesOne) {
  Compiled fp16(kEveryLayer, 4, Precision::kFp16);
  Sgd sgd16(fp16.ctx, fp16.graph.parameters(), fp16.graph.gradients(), {}, fp16.graph.working_parameters());
  EXPECT_EQ(testing::message_of<ConfigError>([&] { train_step(fp16.ctx, fp16.graph, sgd16); }),
            "train_step: an fp16 graph needs a LossScaler (optim/loss_scaler.h)");
  Compiled bf16(kEveryLayer, 4, Precision::kBf16);
  Sgd sgd(bf16.ctx, bf16.graph.parameters(), bf16.graph.gradients(), {}, bf16.graph.working_parameters());
  LossScaler scaler(bf16.ctx, {});
  EXPECT_EQ(testing::message_of<ConfigError>([&] { train_step(bf16.ctx, bf16.graph, sgd, nullptr, &scaler); }),
            "train_step: loss scaling is for fp16 graphs; this one is bf16");
  const LossScaleState negative{.scale = -1.0f, .clean_steps = 0, .skipped_steps = 0};
  EXPECT_EQ(testing::message_of<ConfigError>([&] { scaler.restore(negative); }),
            "LossScaler: a saved state needs a finite scale >= 0 and counts >= 0, got scale -1, clean steps 0, "
            "skipped steps 0");
  EXPECT_EQ(testing::message_of<Error>([&] { scaler.after_backward(bf16.ctx, bf16.graph.working_parameters()); }),
            cat("LossScaler: the gradients must be float32 on cpu, got ", bf16.graph.working_parameters().str()));
}

// A model's parameters written from outside (a loaded file) reach the
// layers through refresh_working_parameters.
TEST(MixedPrecision, RefreshingTheWorkingCopyRoundsTheMaster) {
  Compiled run(kEveryLayer, 4, Precision::kBf16);
  std::vector<float> values(static_cast<size_t>(run.graph.parameters().numel()));
  for (size_t i = 0; i < values.size(); ++i) values[i] = 1.0f + static_cast<float>(i % 97) * 0x1p-12f;
  from_vector<float>(run.ctx, values, run.graph.parameters());
  run.graph.refresh_working_parameters(run.ctx);
  const std::vector<float> working = to_float_vector(run.ctx, run.graph.working_parameters());
  for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(working[i], round_to_16_bit(values[i], DType::kBFloat16));
}

// An fp16 run's checkpoints carry its loss scaling, and a resumed run goes
// on from it; a train file without it, or with a scale that is not one, is
// refused naming the file and the field.
TEST(MixedPrecision, AnFp16CheckpointKeepsItsLossScale) {
  testing::TempDir dir;
  const TrainerOptions options{.epochs = 2, .sgd = {.lr = 0.01f}, .seed = 7, .workers = 1, .steps_per_epoch = 3,
                               .checkpoint_dir = dir.path(), .config = {{"net", "EveryLayer"}, {"precision", "fp16"}},
                               .loss_scale = {.initial = 256.0f, .growth_interval = 2}};
  struct Stop {};
  {
    Compiled first(kEveryLayer, 4, Precision::kFp16);
    Trainer trainer(first.ctx, kEveryLayer, first.graph, open_data("synthetic:64", kEveryLayer.sample, 10), options);
    std::optional<EpochReport> report;
    EXPECT_THROW(trainer.run({.on_epoch = [&](const EpochReport& e) { report = e; throw Stop{}; }}), Stop);
    ASSERT_TRUE(report);
    EXPECT_EQ(report->loss_scale, 256.0f * 2.0f);  // 3 clean steps: one growth at the second
    EXPECT_EQ(report->overflow_steps, 0);
  }
  const TrainingState saved = read_training_state(dir.path());
  ASSERT_TRUE(saved.loss_scale);
  EXPECT_EQ(saved.loss_scale->scale, 512.0f);
  EXPECT_EQ(saved.loss_scale->clean_steps, 1);
  EXPECT_EQ(saved.loss_scale->skipped_steps, 0);
  {
    Compiled resumed(kEveryLayer, 4, Precision::kFp16);
    Trainer trainer(resumed.ctx, kEveryLayer, resumed.graph, open_data("synthetic:64", kEveryLayer.sample, 10),
                    options);
    trainer.resume(dir.path());
    std::optional<EpochReport> report;
    trainer.run({.on_epoch = [&](const EpochReport& e) { report = e; }});
    ASSERT_TRUE(report);
    EXPECT_EQ(report->loss_scale, 2048.0f);  // 1 + 3 clean steps: two more growths
  }
  const std::string train = checkpoint_train_path(dir.path(), 2);
  const SafetensorsFile kept = read_safetensors(train);
  const auto refused = [&](const std::string& value) {
    SafetensorsFile changed = kept;
    if (value.empty()) {
      changed.metadata.erase("loss_scale");
    } else {
      changed.metadata["loss_scale"] = value;
    }
    write_safetensors(train, changed);
    Compiled again(kEveryLayer, 4, Precision::kFp16);
    TrainerOptions more = options;
    more.epochs = 3;
    Trainer trainer(again.ctx, kEveryLayer, again.graph, open_data("synthetic:64", kEveryLayer.sample, 10), more);
    return testing::message_of<DataError>([&] { trainer.resume(dir.path()); });
  };
  EXPECT_EQ(refused(""), cat(train, ": no \"loss_scale\" in its __metadata__ (an fp16 run saves its loss scaling "
                                    "with every checkpoint)"));
  EXPECT_EQ(refused("inf"), cat(train, ": its __metadata__ \"loss_scale\" is 'inf', not a finite loss scale >= 0"));
  EXPECT_EQ(refused("1e3x"), cat(train, ": its __metadata__ \"loss_scale\" is '1e3x', not a finite loss scale >= 0"));
}

// The bar for the precision logic: LeNet on the real Fashion-MNIST in bf16,
// and in fp16 with loss scaling, reaches fp32's test accuracy within 0.5
// points after the same epoch. Each precision's accuracy is the mean of two
// runs (data orders): one run's accuracy moves by a few tenths of a point
// with the order and with the CPU's kernels (AVX2 or AVX-512 round sums
// differently), which a single run at a fraction of an epoch put past the
// bar on one CPU while the precisions were as good as each other.
TEST(MixedPrecision, LeNetLearnsFashionMnistAsInFp32) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Debian's dataset-fashion-mnist is not installed (/usr/share/datasets/fashion-mnist)";
  }
  if (testing::kUnderAddressSanitizer) {
    GTEST_SKIP() << "six epochs of LeNet take minutes under AddressSanitizer: the Release builds run this accuracy "
                    "bar, and the other MixedPrecision tests take the 16-bit path through the sanitizers";
  }
  const auto accuracy = [](Precision precision) {
    double sum = 0.0;
    for (uint64_t seed : {1, 2}) {
      Context ctx = Context::cpu();
      const NetSpec net = find_net("LeNet");
      Graph graph = net.build(64);
      graph.compile(ctx, {.precision = precision});
      Trainer trainer(ctx, net, graph, open_data("fashion-mnist", net.sample, net.classes),
                      {.epochs = 1, .sgd = {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f},
                       .schedule = parse_lr_schedule("cosine", "--schedule"), .seed = seed, .workers = 1});
      std::optional<EpochReport> report;
      trainer.run({.on_epoch = [&](const EpochReport& e) { report = e; }});
      EXPECT_TRUE(report && report->test);
      if (precision == Precision::kFp16) {
        EXPECT_GT(report->loss_scale, 0.0f);
      }
      sum += report && report->test ? report->test->accuracy() : 0.0;
    }
    return sum / 2;
  };
  const double fp32 = accuracy(Precision::kFp32);
  EXPECT_GT(fp32, 0.85);
  for (Precision precision : {Precision::kBf16, Precision::kFp16}) {
    const double mixed = accuracy(precision);
    EXPECT_NEAR(mixed, fp32, 0.005) << flag_name_of(precision);
  }
}

}  // namespace
}  // namespace glassbox
