// tests/test_fusion.cpp: Note [A ReLU fused into its producer]
// (graph/fusion.h) for convolutions and Linear layers
// (tests/test_fusion_residual.cpp: for batch norm and residual adds). Which
// ReLUs the graph fuses into the layer before them (where the ReLU runs in
// place, and only there), and that a fused graph
// computes what the unfused one does: losses, every parameter gradient and
// the parameters after training steps, in fp32 and bf16, training and
// inference, on the CPU and (where one runs here) on a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/fusion.h"
#include "layers/conv2d/conv2d.h"
#include "layers/linear/linear.h"
#include "tests/support/devices.h"
#include "tests/support/fusion_runs.h"

namespace glassbox {
namespace {

// conv_a -> relu_a: fused. conv_b -> relu_b, whose input the shortcut add
// also reads: not in place, so not fused. conv_c (no bias) -> relu_c: fused
// on the CPU only (cuDNN's fused call needs a bias). fc -> relu_fc: fused
// (cuBLASLt's bias + ReLU epilogue on a GPU).
Graph net(int batch) {
  GraphBuilder g;
  const Value images = g.input("images", {batch, 3, 12, 12});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  const Value a = g.relu(g.conv(images, {.out_channels = 8, .kernel = 3, .pad = 1}, "conv_a"), "relu_a");
  const Value b_conv = g.conv(a, {.out_channels = 8, .kernel = 3, .pad = 1}, "conv_b");
  const Value b = g.add({g.relu(b_conv, "relu_b"), b_conv}, "add_b");
  const Value c = g.relu(g.conv(b, {.out_channels = 8, .kernel = 1, .bias = false}, "conv_c"), "relu_c");
  const Value p = g.max_pool(c, {.kernel = 2, .stride = 2}, "pool");
  const Value f = g.relu(g.linear(g.flatten(p, "flatten"), {.out_features = 16}, "fc"), "relu_fc");
  return std::move(g).build(g.softmax_cross_entropy(g.linear(f, {.out_features = 5}, "out"), labels));
}

class FusionTest : public testing::DeviceTest {};

TEST_P(FusionTest, AReluRunsInItsConvolutionWhereItRunsInPlace) {
  Context& ctx = this->ctx();
  for (Phase phase : {Phase::kTraining, Phase::kInference}) {
    Graph graph = net(2);
    graph.compile(ctx, {.phase = phase});
    EXPECT_EQ(testing::fused_relus(graph),
              ctx.is_cuda() ? "relu_a<-conv_a relu_fc<-fc" : "relu_a<-conv_a relu_c<-conv_c relu_fc<-fc");
    EXPECT_FALSE(graph.node("conv_b").layer->fused_relu());
    Graph unfused = net(2);
    unfused.compile(ctx, {.phase = phase, .fusion = false});
    EXPECT_EQ(testing::fused_relus(unfused), "");
    for (const Node& node : unfused.nodes()) {
      if (!node.is_input()) {
        EXPECT_FALSE(node.layer->fused_relu()) << node.name;
      }
    }
  }
}

// Three SGD steps with the ReLUs fused and not: the same losses, gradients
// and parameters. On the CPU to the bit (the ReLU is exact; the products'
// sums are the same); on a GPU the fused calls may run other kernels, whose
// sums round differently: within 1e-4 in fp32, 2e-2 in bf16 (a few roundings
// of at most 2^-8, carried through three steps).
double gpu_tolerance(const Context& ctx, Precision precision) {
  if (!ctx.is_cuda()) return 0.0;
  return precision == Precision::kFp32 ? 1e-4 : 2e-2;
}

TEST_P(FusionTest, AFusedGraphTrainsAsTheUnfusedOne) {
  Context& ctx = this->ctx();
  for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
    const std::string what = std::string(flag_name_of(precision)) + ": ";
    auto run = [&](bool fusion) {
      return testing::train_three_steps(ctx, net(3), {.precision = precision, .fusion = fusion}, 5, "relu_c");
    };
    testing::expect_same_run(run(true), run(false), gpu_tolerance(ctx, precision), what);
  }
}

// A multilayer perceptron: fc1 (32 features out) and fc2 (8) each take the
// ReLU after them. At 1 and 3 rows the CPU streams the weights (on a GPU, a
// single row is the shape cuBLASLt may have no kernel for: Note [When
// cuBLASLt refuses a product], layers/linear/gemm_plan.h); at 40, fc1 runs on
// oneDNN's matmul where the build has it and fc2 on Eigen's products (Note
// [Linear forward on oneDNN's matmul]): every CPU path applies the ReLU.
Graph perceptron(int batch) {
  GraphBuilder g;
  const Value x = g.input("x", {batch, 20});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  const Value h1 = g.relu(g.linear(x, {.out_features = 32}, "fc1"), "relu1");
  const Value h2 = g.relu(g.linear(h1, {.out_features = 8, .bias = false}, "fc2"), "relu2");
  return std::move(g).build(g.softmax_cross_entropy(g.linear(h2, {.out_features = 5}, "out"), labels));
}

TEST_P(FusionTest, ALinearLayerAppliesTheReluAfterIt) {
  Context& ctx = this->ctx();
  for (int batch : {1, 3, 40}) {
    for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
      const std::string what = cat("batch ", batch, ", ", flag_name_of(precision), ": ");
      auto run = [&](bool fusion) {
        Graph graph = perceptron(batch);
        if (fusion) {
          graph.compile(ctx, {.precision = precision});
          EXPECT_EQ(testing::fused_relus(graph), "relu1<-fc1 relu2<-fc2") << what;
        }
        return testing::train_three_steps(ctx, perceptron(batch), {.precision = precision, .fusion = fusion}, 5,
                                          "relu2");
      };
      testing::expect_same_run(run(true), run(false), gpu_tolerance(ctx, precision), what);
    }
  }
}

GLASSBOX_INSTANTIATE_ON_DEVICES(FusionTest);

// Note [When cuBLASLt refuses a product]: with every Linear pinned to
// cublasGemmEx, the bias and the fused ReLU run as one pass of their own and
// the bias gradient as cuBLAS's product of dy with ones; algorithms() says
// so, and the perceptron trains as it does on cuBLASLt's epilogues, at one
// row and at 40.
TEST(FusionCuda, ALinearOnCublasGemmExTrainsAsOnCublasLt) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda(0);
  auto on_gemm_ex = [](int batch) {
    Graph graph = perceptron(batch);
    for (const char* name : {"fc1", "fc2", "out"}) {
      dynamic_cast<Linear&>(*graph.node(name).layer).pin_cuda_library(LinearLibrary::kGemmEx);
    }
    return graph;
  };
  for (int batch : {1, 40}) {
    for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
      const std::string what = cat("batch ", batch, ", ", flag_name_of(precision), ": ");
      Graph graph = on_gemm_ex(batch);
      graph.compile(ctx, {.precision = precision});
      const std::string fc1 = graph.node("fc1").layer->algorithms();
      EXPECT_NE(fc1.find("cuBLAS GemmEx"), std::string::npos) << what << fc1;
      EXPECT_NE(fc1.find("bias and ReLU as one pass of their own"), std::string::npos) << what << fc1;
      EXPECT_NE(fc1.find("bias gradient: cuBLAS"), std::string::npos) << what << fc1;
      const std::string out = graph.node("out").layer->algorithms();
      EXPECT_NE(out.find("bias as a pass of its own"), std::string::npos) << what << out;
      testing::expect_same_run(
          testing::train_three_steps(ctx, on_gemm_ex(batch), {.precision = precision}, 5, "relu2"),
          testing::train_three_steps(ctx, perceptron(batch), {.precision = precision}, 5, "relu2"),
          gpu_tolerance(ctx, precision), what);
    }
  }
}

TEST(Fusion, AProducerThatCannotFuseRefusesIt) {
  Context ctx = Context::cpu();
  Graph graph = net(2);
  graph.compile(ctx);
  Layer& pool = *graph.node("pool").layer;
  try {
    pool.set_fused_relu(ctx, Phase::kTraining, true);
    ADD_FAILURE() << "a max pool took a fused ReLU";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "pool (MaxPool2d): cannot apply a ReLU to its output on cpu in training");
  }
}

TEST(Fusion, IsSetOnABoundLayer) {
  Context ctx = Context::cpu();
  Conv2d conv("conv", {.out_channels = 4, .kernel = 3});
  try {
    conv.set_fused_relu(ctx, Phase::kTraining, true);
    ADD_FAILURE() << "an unbound layer took a fused ReLU";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "conv (Conv2d): set_fused_relu before its input shapes are known (bind first)");
  }
}

}  // namespace
}  // namespace glassbox
