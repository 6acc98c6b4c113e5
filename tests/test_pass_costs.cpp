// tests/test_pass_costs.cpp: Layer::flops and Layer::bytes_moved, the
// roofline's analytic work and traffic per pass, against values worked out by
// hand from the shapes (4 bytes per element; layers/layer.h states the model).
#include <gtest/gtest.h>

#include <vector>

#include "layers/conv2d/conv2d.h"
#include "layers/dropout.h"
#include "layers/linear/linear.h"
#include "layers/lstm/lstm.h"
#include "layers/pool2d/pool2d.h"
#include "layers/relu.h"
#include "layers/softmax_xent.h"

namespace glassbox {
namespace {

TEST(PassCosts, Conv2dCountsEachTensorOncePerPass) {
  // x:(2,3,8,8) 1536 B, w:(4,3,3,3) 432 B, b:(4) 16 B, y:(2,4,8,8) 2048 B.
  Conv2d conv("conv", {.out_channels = 4, .kernel = 3, .pad = 1});
  conv.bind(std::vector<Shape>{Shape{2, 3, 8, 8}});
  const int64_t macs = 2 * 4 * 8 * 8 * (3 * 3 * 3);  // N*K*P*Q * C*R*S = 13824
  EXPECT_EQ(conv.flops(Pass::kForward), 2 * macs);
  EXPECT_EQ(conv.flops(Pass::kBackwardData), 2 * macs);
  EXPECT_EQ(conv.flops(Pass::kBackwardWeights), 2 * macs);
  EXPECT_EQ(conv.flops(Pass::kBackward), 4 * macs);
  EXPECT_EQ(conv.bytes_moved(Pass::kForward), 1536 + 432 + 16 + 2048);           // x, w, b; y
  EXPECT_EQ(conv.bytes_moved(Pass::kBackwardData), 2048 + 432 + 1536);           // dy, w; dx
  EXPECT_EQ(conv.bytes_moved(Pass::kBackwardWeights), 2048 + 1536 + 2 * 448);    // dy, x; dW, db read and written
  EXPECT_EQ(conv.bytes_moved(Pass::kBackward), 2048 + 1536 + 448 + 1536 + 2 * 448);  // dy, x, w+b; dx; dW, db
  EXPECT_EQ(conv.flops(Pass::kOptimizer), 0);
  EXPECT_EQ(conv.bytes_moved(Pass::kOptimizer), 0);
}

TEST(PassCosts, LinearCountsEachTensorOncePerPass) {
  // x:(4,10) 160 B, w:(3,10) 120 B, b:(3) 12 B, y:(4,3) 48 B.
  Linear fc("fc", {.out_features = 3});
  fc.bind(std::vector<Shape>{Shape{4, 10}});
  EXPECT_EQ(fc.flops(Pass::kForward), 2 * 4 * 10 * 3);
  EXPECT_EQ(fc.flops(Pass::kBackwardData), 240);
  EXPECT_EQ(fc.flops(Pass::kBackwardWeights), 240);
  EXPECT_EQ(fc.bytes_moved(Pass::kForward), 160 + 120 + 12 + 48);
  EXPECT_EQ(fc.bytes_moved(Pass::kBackwardData), 48 + 120 + 160);
  EXPECT_EQ(fc.bytes_moved(Pass::kBackwardWeights), 48 + 160 + 2 * 132);
}

TEST(PassCosts, ReLUIsMemoryBoundAndItsBackwardReadsTheOutput) {
  ReLU relu("relu");
  relu.bind(std::vector<Shape>{Shape{2, 3, 4, 4}});  // 96 elements, 384 B each way
  EXPECT_EQ(relu.flops(Pass::kForward), 0);
  EXPECT_EQ(relu.flops(Pass::kBackward), 0);
  EXPECT_EQ(relu.bytes_moved(Pass::kForward), 384 + 384);            // x; y
  EXPECT_EQ(relu.bytes_moved(Pass::kBackward), 384 + 384 + 384);     // dy, y (not x); dx
}

TEST(PassCosts, MaxPoolBackwardReadsInputOutputAndGradient) {
  Pool2d pool("pool", Pool2d::Mode::kMax, {.kernel = 2, .stride = 2});
  pool.bind(std::vector<Shape>{Shape{1, 2, 4, 4}});  // x 128 B -> y:(1,2,2,2) 32 B
  EXPECT_EQ(pool.flops(Pass::kForward), 0);
  EXPECT_EQ(pool.bytes_moved(Pass::kForward), 128 + 32);
  EXPECT_EQ(pool.bytes_moved(Pass::kBackward), 32 + 128 + 32 + 128);  // dy, x, y; dx
}

TEST(PassCosts, SoftmaxCrossEntropyAddsItsSavedLogProbabilities) {
  SoftmaxCrossEntropy loss("loss");
  loss.bind(std::vector<Shape>{Shape{4, 10}, Shape{4}});  // logits 160 B, int32 labels 16 B, loss 4 B
  EXPECT_EQ(loss.bytes_moved(Pass::kForward), 160 + 16 + 4 + 160);    // logits, labels; loss, logp
  EXPECT_EQ(loss.bytes_moved(Pass::kBackward), 16 + 4 + 160 + 160);   // labels, loss, logp; dlogits (no dy)
}

TEST(PassCosts, DropoutAddsItsMask) {
  Dropout dropout("drop", {.p = 0.5f});
  dropout.bind(std::vector<Shape>{Shape{4, 10}});  // 160 B each: x, y, mask, dy, dx
  EXPECT_EQ(dropout.bytes_moved(Pass::kForward), 160 + 160 + 160);   // x; y, mask
  EXPECT_EQ(dropout.bytes_moved(Pass::kBackward), 160 + 160 + 160);  // dy, mask; dx
}

TEST(PassCosts, AnInferencePlanKeepsNoDropoutMask) {
  Context ctx = Context::cpu();
  Dropout dropout("drop", {.p = 0.5f});
  dropout.bind(std::vector<Shape>{Shape{4, 10}});
  dropout.prepare(ctx, {.phase = Phase::kInference});
  EXPECT_EQ(dropout.bytes_moved(Pass::kForward), 160 + 160);  // x; y
}

// x:(T 3, B 2, I 5) 120 B, H 4, 2 layers with dropout between them; y 96 B.
// One (T, B, H) value of one layer is 96 B; of both layers 192 B. Weights:
// w_ih_l0 (16,5) 320 B, w_hh_l0 (16,4) 256 B, w_ih_l1 and w_hh_l1 (16,4) 256
// B each; biases 4 x 64 B; parameters 1344 B in all.
TEST(PassCosts, AnLstmCountsItsSavedValuesEveryWeightAndItsLayersOutputs) {
  Lstm lstm("rnn", {.hidden = 4, .layers = 2, .dropout = 0.5f});
  lstm.bind(std::vector<Shape>{Shape{3, 2, 5}});
  const int64_t saved = 6 * 192, gate_grads = 4 * 192, mask = 96, grads = 2 * 1344;  // grads read and written
  EXPECT_EQ(lstm.bytes_moved(Pass::kForward), 120 + 1344 + 96 + saved + mask);  // x, params; y, saved, mask
  // dy, every weight matrix, the saved values, the mask, the gate gradients; dx.
  EXPECT_EQ(lstm.bytes_moved(Pass::kBackwardData), 96 + (320 + 256 + 256 + 256) + saved + mask + gate_grads + 120);
  // x, both layers' outputs, the gate gradients (not dy); the parameter gradients.
  EXPECT_EQ(lstm.bytes_moved(Pass::kBackwardWeights), 120 + 192 + gate_grads + grads);

  Context ctx = Context::cpu();
  lstm.prepare(ctx, {.phase = Phase::kInference});  // keeps no cells and draws no mask
  EXPECT_EQ(lstm.bytes_moved(Pass::kForward), 120 + 1344 + 96);
}

}  // namespace
}  // namespace glassbox
