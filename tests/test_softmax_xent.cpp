// tests/test_softmax_xent.cpp
#include <gtest/gtest.h>

#include <cmath>

#include "layers/softmax_xent.h"
#include "tensor/copy.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

std::unique_ptr<Layer> make_xent() { return std::make_unique<SoftmaxCrossEntropy>("xent"); }

void set_labels(testing::LayerHarness& h, const std::vector<int>& labels) {
  from_vector<int>(h.ctx, labels, h.inputs[1]);
}


TEST(SoftmaxCrossEntropy, HandComputedLossAndGradient) {
  Context ctx = Context::cpu();
  SoftmaxCrossEntropy xent("xent");
  testing::LayerHarness h(ctx, xent, {Shape{2, 3}, Shape{2}});
  h.write(h.inputs[0], {1.0f, 2.0f, 3.0f,  //
                        1.0f, 1.0f, 1.0f});
  set_labels(h, {2, 0});
  h.poison(h.output);
  h.forward();
  // Row 0: -logp = log(1 + e^-1 + e^-2) = 0.4076059...; row 1: log 3 = 1.0986123...
  // loss = (0.4076059 + 1.0986123) / 2
  EXPECT_NEAR(h.read(h.output)[0], 0.7531091f, 1e-6);
  // (softmax - onehot) / N; softmax of (1, 2, 3) = (0.0900306, 0.2447285, 0.6652410).
  h.poison(h.input_grads[0]);
  h.backward();
  testing::expect_close(h.read(h.input_grads[0]),
                        {0.0450153f, 0.1223642f, -0.1673795f,  //
                         -1.0f / 3.0f, 1.0f / 6.0f, 1.0f / 6.0f},
                        1e-6, "dlogits");
}

TEST(SoftmaxCrossEntropy, UniformLogitsCostLogK) {
  Context ctx = Context::cpu();
  SoftmaxCrossEntropy xent("xent");
  testing::LayerHarness h(ctx, xent, {Shape{5, 1000}, Shape{5}});
  h.write(h.inputs[0], std::vector<float>(5000, 0.3f));
  set_labels(h, {0, 999, 500, 7, 123});
  h.forward();
  EXPECT_NEAR(h.read(h.output)[0], std::log(1000.0), 1e-5);
}

TEST(SoftmaxCrossEntropy, StableForLargeLogits) {
  Context ctx = Context::cpu();
  SoftmaxCrossEntropy xent("xent");
  testing::LayerHarness h(ctx, xent, {Shape{1, 2}, Shape{1}});
  h.write(h.inputs[0], {1000.0f, 0.0f});
  set_labels(h, {1});
  h.forward();
  EXPECT_NEAR(h.read(h.output)[0], 1000.0f, 1e-3);
}

TEST(SoftmaxCrossEntropy, GradientsMatchFiniteDifferences) {
  testing::check_gradients(make_xent, {Shape{4, 7}, Shape{4}},
                           {.fill = [](testing::LayerHarness& h) { set_labels(h, {3, 0, 6, 3}); }});
}

TEST(SoftmaxCrossEntropy, LabelsGetNoGradient) {
  Context ctx = Context::cpu();
  SoftmaxCrossEntropy xent("xent");
  testing::LayerHarness h(ctx, xent, {Shape{2, 3}, Shape{2}});
  EXPECT_EQ(xent.input_dtype(0), DType::kFloat32);
  EXPECT_EQ(xent.input_dtype(1), DType::kInt32);
  EXPECT_TRUE(xent.is_loss());
  EXPECT_FALSE(h.input_grads[1].defined());
  EXPECT_EQ(xent.output_shape(), (Shape{1}));
}

TEST(SoftmaxCrossEntropy, RejectsLabelOutOfRange) {
  Context ctx = Context::cpu();
  SoftmaxCrossEntropy xent("loss3");
  testing::LayerHarness h(ctx, xent, {Shape{3, 5}, Shape{3}});
  h.randomize(1);
  const std::pair<std::vector<int>, const char*> cases[] = {
      {{0, 4, 5}, "loss3 (SoftmaxCrossEntropy): sample 2 has label 5, outside [0, 5)"},
      {{-1, 4, 9}, "loss3 (SoftmaxCrossEntropy): sample 0 has label -1, outside [0, 5)"},
  };
  for (const auto& [labels, message] : cases) {
    set_labels(h, labels);
    try {
      h.forward();
      ADD_FAILURE() << "accepted labels " << labels[0] << ", " << labels[1] << ", " << labels[2];
    } catch (const ShapeError&) {
      ADD_FAILURE() << "a bad label is not a shape error";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), message);
    }
  }
}

TEST(SoftmaxCrossEntropy, Describes) {
  SoftmaxCrossEntropy xent("loss");
  xent.bind(std::vector<Shape>{Shape{64, 1000}, Shape{64}});
  EXPECT_EQ(xent.describe(), "1000 classes, mean over 64");
}

TEST(SoftmaxCrossEntropy, RejectsBadShapes) {
  SoftmaxCrossEntropy xent("loss");
  const std::pair<std::vector<Shape>, const char*> cases[] = {
      {{Shape{2, 3, 4}, Shape{2}},
       "loss (SoftmaxCrossEntropy): input 0 must be (N, K) logits, got shape (2, 3, 4)"},
      {{Shape{2, 3}, Shape{3}},
       "loss (SoftmaxCrossEntropy): input 1 must be (N) labels, one per row of the logits (2, 3), so (2); got "
       "shape (3)"},
      {{Shape{2, 3}, Shape{2, 1}},
       "loss (SoftmaxCrossEntropy): input 1 must be (N) labels, one per row of the logits (2, 3), so (2); got "
       "shape (2, 1)"},
      {{Shape{2, 3}}, "loss (SoftmaxCrossEntropy): takes 2 input(s), got 1"},
  };
  for (const auto& [shapes, message] : cases) {
    try {
      xent.bind(shapes);
      ADD_FAILURE() << "accepted " << shapes[0].str();
    } catch (const ShapeError& e) {
      EXPECT_STREQ(e.what(), message);
    }
  }
}

// Labels (i * 37) % K: spread over the classes.
void spread_labels(testing::LayerHarness& h) {
  const int64_t n = h.inputs[1].numel(), k = h.inputs[0].shape()[1];
  std::vector<int> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = static_cast<int>((i * 37) % k);
  set_labels(h, labels);
}

TEST(SoftmaxCrossEntropy, CudaMatchesCpu) {
  testing::check_cpu_cuda_parity(make_xent, {Shape{6, 10}, Shape{6}}, {.fill = spread_labels});
  // ImageNet-sized: gradients are about 1e-5 here, so the tolerance is tight.
  testing::check_cpu_cuda_parity(make_xent, {Shape{64, 1000}, Shape{64}},
                                 {.tolerance = 5e-6, .fill = spread_labels});
}

// The kernel cannot throw: a bad label makes the loss and that row's gradient NaN.
TEST(SoftmaxCrossEntropy, CudaBadLabelGivesNaN) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda(0);
  SoftmaxCrossEntropy xent("xent");
  testing::LayerHarness h(ctx, xent, {Shape{3, 5}, Shape{3}});
  h.randomize(1);
  set_labels(h, {0, 5, 2});
  h.forward();
  EXPECT_TRUE(std::isnan(h.read(h.output)[0]));
  h.backward();
  const std::vector<float> grad = h.read(h.input_grads[0]);
  for (size_t i = 0; i < grad.size(); ++i) EXPECT_EQ(std::isnan(grad[i]), i >= 5 && i < 10) << i;
  set_labels(h, {0, 4, 2});
  h.forward();
  EXPECT_FALSE(std::isnan(h.read(h.output)[0]));
}

}  // namespace
}  // namespace glassbox
