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
    } catch (const DataError& e) {  // the data's fault, as the loader's check of a label says
      EXPECT_STREQ(e.what(), message);
    }
  }
}

TEST(SoftmaxCrossEntropy, Describes) {
  SoftmaxCrossEntropy xent("loss");
  xent.bind(std::vector<Shape>{Shape{64, 1000}, Shape{64}});
  EXPECT_EQ(xent.describe(), "1000 classes, mean over 64");
  xent.bind(std::vector<Shape>{Shape{35, 20, 10000}, Shape{35, 20}});
  EXPECT_EQ(xent.describe(), "10000 classes, mean over 700 positions (35, 20)");
}

// (T, B, K) logits and (T, B) targets: every position is a row, the loss the
// mean over all T*B of them. The rows of the (N, K) example above and two more.
TEST(SoftmaxCrossEntropy, HandComputedLossOverASequence) {
  Context ctx = Context::cpu();
  SoftmaxCrossEntropy xent("xent");
  testing::LayerHarness h(ctx, xent, {Shape{2, 2, 3}, Shape{2, 2}});
  h.write(h.inputs[0], {1.0f, 2.0f, 3.0f,  // t0 b0
                        1.0f, 1.0f, 1.0f,  // t0 b1
                        0.0f, 1.0f, 0.0f,  // t1 b0
                        2.0f, 0.0f, 0.0f});  // t1 b1
  set_labels(h, {2, 0, 1, 2});
  h.poison(h.output);
  h.forward();
  // -logp per position: log(1 + e^-1 + e^-2) = 0.4076060, log 3 = 1.0986123,
  // log(1 + 2/e) = 0.5514447, 2 + log(1 + 2/e^2) = 2.2395448; their mean:
  EXPECT_NEAR(h.read(h.output)[0], 1.0743019f, 1e-6);
  h.poison(h.input_grads[0]);
  h.backward();
  testing::expect_close(h.read(h.input_grads[0]),
                        {0.0225076f, 0.0611821f, -0.0836898f,  //
                         -1.0f / 6.0f, 1.0f / 12.0f, 1.0f / 12.0f,  //
                         0.0529854f, -0.1059708f, 0.0529854f,  //
                         0.1967465f, 0.0266267f, -0.2233733f},
                        1e-6, "dlogits, (softmax - onehot) / 4");
}

TEST(SoftmaxCrossEntropy, GradientsOverASequence) {
  testing::check_gradients(make_xent, {Shape{3, 2, 5}, Shape{3, 2}},
                           {.fill = [](testing::LayerHarness& h) { set_labels(h, {4, 0, 2, 2, 1, 3}); }});
}

TEST(SoftmaxCrossEntropy, RejectsALabelOutOfRangeNamingItsPosition) {
  Context ctx = Context::cpu();
  SoftmaxCrossEntropy xent("loss");
  testing::LayerHarness h(ctx, xent, {Shape{3, 2, 4}, Shape{3, 2}});
  h.randomize(1);
  set_labels(h, {0, 1, 2, 3, 4, 0});
  try {
    h.forward();
    FAIL() << "accepted label 4 of 4 classes";
  } catch (const DataError& e) {
    EXPECT_STREQ(e.what(), "loss (SoftmaxCrossEntropy): position (2, 0) has label 4, outside [0, 4)");
  }
}

TEST(SoftmaxCrossEntropy, RejectsBadShapes) {
  SoftmaxCrossEntropy xent("loss");
  const std::pair<std::vector<Shape>, const char*> cases[] = {
      {{Shape{5}, Shape{}},
       "loss (SoftmaxCrossEntropy): input 0 must be (N, K) logits, or (..., K) with more leading dimensions, got "
       "shape (5)"},
      {{Shape{2, 3, 4}, Shape{2}},
       "loss (SoftmaxCrossEntropy): input 1 must be the labels, one per row of the logits (2, 3, 4), so shape "
       "(2, 3); got shape (2)"},
      {{Shape{2, 3, 4}, Shape{3, 2}},
       "loss (SoftmaxCrossEntropy): input 1 must be the labels, one per row of the logits (2, 3, 4), so shape "
       "(2, 3); got shape (3, 2)"},
      {{Shape{2, 3}, Shape{3}},
       "loss (SoftmaxCrossEntropy): input 1 must be the labels, one per row of the logits (2, 3), so shape (2); "
       "got shape (3)"},
      {{Shape{2, 3}, Shape{2, 1}},
       "loss (SoftmaxCrossEntropy): input 1 must be the labels, one per row of the logits (2, 3), so shape (2); "
       "got shape (2, 1)"},
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
  const Shape& logits = h.inputs[0].shape();
  const int64_t n = h.inputs[1].numel(), k = logits[logits.rank() - 1];
  std::vector<int> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = static_cast<int>((i * 37) % k);
  set_labels(h, labels);
}

TEST(SoftmaxCrossEntropy, CudaMatchesCpu) {
  testing::check_cpu_cuda_parity(make_xent, {Shape{6, 10}, Shape{6}}, {.fill = spread_labels});
  // ImageNet-sized: gradients are about 1e-5 here, so the tolerance is tight.
  testing::check_cpu_cuda_parity(make_xent, {Shape{64, 1000}, Shape{64}},
                                 {.tolerance = 5e-6, .fill = spread_labels});
  // A language model's (T, B, V): cuDNN's softmax must run over each position's V values.
  testing::check_cpu_cuda_parity(make_xent, {Shape{7, 3, 500}, Shape{7, 3}},
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
