// tests/test_precision_staging.cpp: how a 16-bit graph hands each layer its
// tensors (Note [16-bit values in a layer], layers/layer.h; Note [Mixed
// precision], graph/mixed_precision.h). A layer that computes in 16 bits gets
// them as they are, an fp32 graph input cast to 16 bits for it; every other
// layer gets fp32 staging. On the CPU no shipped layer computes in 16 bits,
// so a test layer that does (y = w * x, read and written as 16-bit bits)
// stands in for the GPU's cuDNN and cuBLAS layers.
#include <gtest/gtest.h>

#include <cmath>

#include "graph/builder.h"
#include "graph/memory_plan.h"
#include "graph/mixed_precision.h"
#include "tensor/convert.h"
#include "tensor/copy.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

// y = w[0] * x over (N, F), on 16-bit values, with fp32 arithmetic:
//   y = round(w * x);  dx (= or +=) round(w * dy);  dw += sum(x * dy) in fp32.
class Scale16 final : public Layer {
 public:
  explicit Scale16(std::string name = "scale") : Layer(std::move(name)) {}
  std::string_view type() const override { return "Scale16"; }
  std::string describe() const override { return "y = w * x in 16 bits"; }
  Shape infer(std::span<const Shape> inputs) const override { return inputs[0]; }
  std::vector<ParamSpec> param_specs() const override { return {{"weight", Shape{1}, Init::kOnes}}; }
  bool computes_16_bit(const Context& ctx) const override { return !ctx.is_cuda(); }

 private:
  void prepare_cuda(Context&, const PrepareOptions&) override { fail("CPU only"); }
  void forward_cuda(Context&, const ForwardArgs&) override { fail("CPU only"); }
  void backward_cuda(Context&, const BackwardArgs&) override { fail("CPU only"); }

  float read(const Tensor& t, int64_t i) const {
    if (t.dtype() == DType::kFloat32) return t.data<float>()[i];
    return from_16_bit(static_cast<const uint16_t*>(t.raw())[i], t.dtype());
  }
  void write(const Tensor& t, int64_t i, float v) const {
    if (t.dtype() == DType::kFloat32) {
      t.data<float>()[i] = v;
    } else {
      static_cast<uint16_t*>(t.raw())[i] = to_16_bit(v, t.dtype());
    }
  }
  void forward_cpu(Context&, const ForwardArgs& a) override {
    const float w = read(a.params[0], 0);
    for (int64_t i = 0; i < a.output.numel(); ++i) write(a.output, i, w * read(a.inputs[0], i));
  }
  void backward_cpu(Context&, const BackwardArgs& a) override {
    const float w = read(a.params[0], 0);
    float dw = 0.0f;
    for (int64_t i = 0; i < a.output.numel(); ++i) {
      const float dy = read(a.output_grad, i);
      dw += read(a.inputs[0], i) * dy;
      if (a.input_grads[0].defined()) {
        const float base = a.input_grad_modes[0] == GradMode::kAdd ? read(a.input_grads[0], i) : 0.0f;
        write(a.input_grads[0], i, base + w * dy);
      }
    }
    a.param_grads[0].data<float>()[0] += dw;
  }
};

// A layer that packs its parameters (as the LSTM does for cuDNN's weight
// space) but computes in fp32 and takes the 16-bit working copy: staging
// would hand it its parameters one at a time, not in their block.
class PackedFp32 final : public Layer {
 public:
  PackedFp32() : Layer("packed") {}
  std::string_view type() const override { return "PackedFp32"; }
  std::string describe() const override { return "y = x, its parameters packed"; }
  Shape infer(std::span<const Shape> inputs) const override { return inputs[0]; }
  std::vector<ParamSpec> param_specs() const override { return {{"weight", Shape{3}, Init::kOnes}}; }
  bool packs_parameters() const override { return true; }

 private:
  void prepare_cuda(Context&, const PrepareOptions&) override { fail("CPU only"); }
  void forward_cuda(Context&, const ForwardArgs&) override { fail("CPU only"); }
  void backward_cuda(Context&, const BackwardArgs&) override { fail("CPU only"); }
  void forward_cpu(Context&, const ForwardArgs&) override { fail("not run"); }
  void backward_cpu(Context&, const BackwardArgs&) override { fail("not run"); }
};

const std::vector<float> kImages = {0.1f, -1.3f, 2.7f, 0.333f, 5.01f, -0.77f,
                                    1e-3f, 3.14159f, -2.5f, 0.6f, 7.7f, -0.05f};
const std::vector<int32_t> kLabels = {1, 2};

Graph scaled_net() {
  GraphBuilder g;
  const Value x = g.input("images", {2, 6});
  const Value labels = g.input("labels", {2}, DType::kInt32);
  const Value scaled = g.append(std::make_unique<Scale16>(), {x});
  return std::move(g).build(
      g.softmax_cross_entropy(g.linear(g.relu(scaled, "relu"), {.out_features = 3}, "fc"), labels));
}

struct ScaledNet {
  Context ctx = Context::cpu(2);
  Graph graph = scaled_net();

  explicit ScaledNet(Precision precision) {
    graph.compile(ctx, {.precision = precision, .seed = 7, .memory_reuse = MemoryReuse::kOff});
    from_vector<float>(ctx, kImages, graph.node("images").value);
    from_vector<int32_t>(ctx, kLabels, graph.node("labels").value);
    // w = 3 exactly, in both the master and the working copy.
    const size_t offset = static_cast<size_t>(static_cast<const char*>(graph.node("scale").params[0].raw()) -
                                              static_cast<const char*>(graph.working_parameters().defined()
                                                                           ? graph.working_parameters().raw()
                                                                           : graph.parameters().raw()));
    const size_t element = offset / (graph.working_parameters().defined() ? 2 : 4);
    graph.parameters().data<float>()[element] = 3.0f;
    graph.refresh_working_parameters(ctx);
  }
};

TEST(PrecisionStaging, ALayerThatComputesIn16BitsGetsItsTensorsAsTheyAreAndTheImagesCast) {
  for (Precision precision : {Precision::kBf16, Precision::kFp16}) {
    SCOPED_TRACE(flag_name_of(precision));
    const DType half = value_dtype(precision);
    ScaledNet net(precision);
    const Node& scale = net.graph.node("scale");
    EXPECT_EQ(scale.layer->value_storage(), half);
    EXPECT_EQ(scale.layer->weight_storage(), half);
    EXPECT_EQ(net.graph.node("relu").layer->value_storage(), DType::kFloat32);
    EXPECT_EQ(precision_path(scale), flag_name_of(precision));
    EXPECT_EQ(precision_path(net.graph.node("relu")), cat("fp32, staged from ", flag_name_of(precision)));
    EXPECT_EQ(precision_path(net.graph.node("images")), "");
    // The roofline counts its traffic in 16 bits (x, w and y: 12 + 1 + 12
    // elements of 2 bytes), and its weight gradient, fp32, in 4.
    EXPECT_EQ(scale.layer->bytes_moved(Pass::kForward), 2 * 25);
    EXPECT_EQ(scale.layer->bytes_moved(Pass::kBackwardWeights), 2 * (12 + 12) + 2 * 4);
    // Its staging is the images' 16-bit copy alone (its output and gradient are 16-bit already).
    EXPECT_EQ(PrecisionStaging::staging_bytes(scale, Phase::kTraining), plan_aligned(12 * size_of(half)));

    net.graph.forward(net.ctx, Phase::kTraining);
    const std::vector<float> images = to_vector<float>(net.ctx, net.graph.node("images").value);
    const std::vector<float> y = to_float_vector(net.ctx, scale.value);
    for (size_t i = 0; i < images.size(); ++i) {
      // The image is rounded to 16 bits before the layer reads it, as autocast casts it.
      EXPECT_EQ(y[i], round_to_16_bit(3.0f * round_to_16_bit(images[i], half), half)) << i;
    }
    net.graph.backward(net.ctx, Graph::ParamGrads::kReplace);
    const Tensor& dw = scale.param_grads[0];
    EXPECT_EQ(dw.dtype(), DType::kFloat32);
    const float grad = to_vector<float>(net.ctx, dw)[0];
    EXPECT_TRUE(std::isfinite(grad));
    EXPECT_NE(grad, 0.0f);
  }
}

TEST(PrecisionStaging, AnFp32GraphLeavesEveryLayerInFp32) {
  ScaledNet net(Precision::kFp32);
  for (const Node& node : net.graph.nodes()) {
    if (node.layer) {
      EXPECT_EQ(node.layer->value_storage(), DType::kFloat32) << node.name;
    }
  }
  EXPECT_EQ(precision_path(net.graph.node("scale")), "fp32");
  EXPECT_EQ(net.graph.node("scale").layer->bytes_moved(Pass::kForward), 4 * 25);
}

TEST(PrecisionStaging, ALayerThatCannotComputeIn16BitsRefusesA16BitStorage) {
  GraphBuilder g;
  const Value x = g.input("x", {2, 4});
  const Value labels = g.input("labels", {2}, DType::kInt32);
  Graph graph = std::move(g).build(g.softmax_cross_entropy(g.relu(x, "relu"), labels));
  Context ctx = Context::cpu();
  graph.compile(ctx);
  Layer& relu = *graph.node("relu").layer;
  relu.set_value_storage(DType::kBFloat16);
  EXPECT_EQ(testing::message_of<ConfigError>([&] { relu.prepare(ctx); }),
            "relu (ReLU): cannot store its values as bfloat16 on cpu (Layer::computes_16_bit is false there: "
            "the graph widens them to float32 for it)");
  EXPECT_EQ(testing::message_of<ConfigError>([&] { relu.set_value_storage(DType::kInt32); }),
            "relu (ReLU): values are stored as float32, float16 or bfloat16, not int32");
  EXPECT_EQ(testing::message_of<Error>([&] { graph.set_loss_scale_on_device(graph.parameters().data<float>()); }),
            "set_loss_scale_on_device: the graph is on cpu; use set_loss_scale");
  Graph uncompiled = scaled_net();
  EXPECT_EQ(testing::message_of<Error>([&] { uncompiled.set_loss_scale_on_device(nullptr); }),
            "set_loss_scale_on_device: the graph is not compiled; call compile(ctx) first");
  Scale16 unbound;
  EXPECT_EQ(testing::message_of<ShapeError>([&] { unbound.set_value_storage(DType::kFloat16); }),
            "scale (Scale16): set_value_storage before its input shapes are known (bind first)");
}

TEST(PrecisionStaging, ALayerThatPacksItsParametersTakesThemInFp32OrComputesIn16Bits) {
  auto packed_net = [] {
    GraphBuilder g;
    const Value x = g.input("x", {2, 4});
    const Value labels = g.input("labels", {2}, DType::kInt32);
    return std::move(g).build(g.softmax_cross_entropy(g.append(std::make_unique<PackedFp32>(), {x}), labels));
  };
  Context ctx = Context::cpu();
  Graph fp32 = packed_net();
  EXPECT_NO_THROW(fp32.compile(ctx));
  Graph bf16 = packed_net();
  EXPECT_EQ(testing::message_of<Error>([&] { bf16.compile(ctx, {.precision = Precision::kBf16}); }),
            "packed: a PackedFp32 packs its parameters, so in a bf16 graph it must take its fp32 master weights or "
            "compute in bfloat16 itself");
}

// An fp32 graph input read by two 16-bit layers: its gradient is summed in
// fp32. Each layer's share is rounded to 16 bits once (it is computed in the
// layer's type), then added widened; not rounded again as a 16-bit sum.
TEST(PrecisionStaging, AnFp32InputsGradientFromTwo16BitReadersIsSummedInFp32) {
  for (Precision precision : {Precision::kBf16, Precision::kFp16}) {
    SCOPED_TRACE(flag_name_of(precision));
    const DType half = value_dtype(precision);
    GraphBuilder g;
    const Value x = g.input("images", {2, 6});
    const Value labels = g.input("labels", {2}, DType::kInt32);
    const Value a = g.append(std::make_unique<Scale16>("a"), {x});
    const Value b = g.append(std::make_unique<Scale16>("b"), {x});
    Graph graph =
        std::move(g).build(g.softmax_cross_entropy(g.linear(g.add({a, b}, "sum"), {.out_features = 3}, "fc"), labels));
    Context ctx = Context::cpu(2);
    graph.compile(ctx, {.precision = precision, .seed = 7, .memory_reuse = MemoryReuse::kOff,
                        .input_gradients = {"images"}});
    // w_a = 0.3, w_b = 3.7 (as their 16-bit working copies round them): shares of unlike size.
    for (const auto& [name, w] : {std::pair<const char*, float>{"a", 0.3f}, {"b", 3.7f}}) {
      const size_t element = static_cast<size_t>(static_cast<const char*>(graph.node(name).params[0].raw()) -
                                                 static_cast<const char*>(graph.working_parameters().raw())) / 2;
      graph.parameters().data<float>()[element] = w;
    }
    graph.refresh_working_parameters(ctx);
    from_vector<float>(ctx, kImages, graph.node("images").value);
    from_vector<int32_t>(ctx, kLabels, graph.node("labels").value);
    graph.forward(ctx, Phase::kTraining);
    graph.backward(ctx, Graph::ParamGrads::kReplace);

    const float w_a = round_to_16_bit(0.3f, half), w_b = round_to_16_bit(3.7f, half);
    const std::vector<float> dy_a = to_float_vector(ctx, graph.node("a").grad);
    const std::vector<float> dy_b = to_float_vector(ctx, graph.node("b").grad);
    const std::vector<float> dx = to_vector<float>(ctx, graph.input_gradient("images"));
    ASSERT_EQ(dx.size(), kImages.size());
    int rounded_twice_differs = 0;
    for (size_t i = 0; i < dx.size(); ++i) {
      const float share_a = round_to_16_bit(w_a * dy_a[i], half), share_b = round_to_16_bit(w_b * dy_b[i], half);
      EXPECT_EQ(dx[i], share_a + share_b) << i;
      rounded_twice_differs += round_to_16_bit(share_a + share_b, half) != share_a + share_b ? 1 : 0;
    }
    EXPECT_GT(rounded_twice_differs, 0) << "no value tells a 16-bit sum from an fp32 one";
  }
}

}  // namespace
}  // namespace glassbox
