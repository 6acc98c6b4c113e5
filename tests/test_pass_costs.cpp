// tests/test_pass_costs.cpp: Layer::flops and Layer::bytes_moved, the
// roofline's analytic work and traffic per pass, against values worked out by
// hand from the shapes (4 bytes per element; layers/layer.h states the model).
#include <gtest/gtest.h>

#include <vector>

#include "layers/conv2d/conv2d.h"
#include "layers/dropout.h"
#include "layers/linear/linear.h"
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

}  // namespace
}  // namespace glassbox
