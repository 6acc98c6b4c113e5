// tests/test_step_readback.cpp: Note [Reading a step's results a step late]
// (tensor/step_readback.h): each step's copies come back tagged with their
// step, in order, as they were when recorded, whatever happened to the
// tensors after; at most depth + 1 unread; and a loss read late says so when
// it is not finite (graph/finite_check.h).
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "data/synthetic.h"
#include "graph/finite_check.h"
#include "nets/registry.h"
#include "tensor/convert.h"
#include "tensor/copy.h"
#include "tensor/step_readback.h"
#include "tests/support/data_files.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

std::string error_of(const std::function<void()>& f) { return testing::message_of<Error>(f); }

class StepReadbackTest : public testing::DeviceTest {};

// Step k writes k into the float, 10 k into the ints and k / 4 into the
// half values; depth 1 lets step k + 1 overwrite them before step k is read.
TEST_P(StepReadbackTest, EachStepComesBackAsItWasRecorded) {
  Context& ctx = this->ctx();
  const Tensor loss = ctx.allocate(Shape{1}, DType::kFloat32, MemoryCategory::kActivations);
  const Tensor labels = ctx.allocate(Shape{3}, DType::kInt32, MemoryCategory::kData);
  const Tensor half = ctx.allocate(Shape{2}, DType::kBFloat16, MemoryCategory::kActivations);
  const Tensor wide = ctx.allocate(Shape{2}, DType::kFloat32, MemoryCategory::kActivations);
  for (int depth : {0, 1, 2}) {
    StepReadback readback(ctx, {loss, labels, half}, depth);
    std::vector<int64_t> read;
    auto check = [&](const Readout& r) {
      const auto k = static_cast<float>(r.step);
      EXPECT_EQ(r.floats(0), std::vector<float>{k}) << "depth " << depth;
      const int ten_k = static_cast<int>(10 * r.step);
      EXPECT_EQ(r.ints(1), (std::vector<int>{ten_k, ten_k + 1, ten_k + 2})) << "depth " << depth;
      EXPECT_EQ(r.floats(2), (std::vector<float>{k / 4, -k / 4})) << "depth " << depth;
      read.push_back(r.step);
    };
    for (int64_t step = 1; step <= 5; ++step) {
      const auto k = static_cast<float>(step);
      from_vector<float>(ctx, std::vector<float>{k}, loss);
      const int ten_k = static_cast<int>(10 * step);
      from_vector<int>(ctx, std::vector<int>{ten_k, ten_k + 1, ten_k + 2}, labels);
      from_vector<float>(ctx, std::vector<float>{k / 4, -k / 4}, wide);
      convert(ctx, wide, half);
      readback.record(step);
      EXPECT_EQ(readback.unread(), std::min<int>(static_cast<int>(step), depth + 1));
      while (readback.due()) check(readback.take());
    }
    EXPECT_EQ(readback.unread(), depth);
    while (readback.unread() > 0) check(readback.take());
    EXPECT_EQ(read, (std::vector<int64_t>{1, 2, 3, 4, 5})) << "depth " << depth;
  }
}

TEST_P(StepReadbackTest, ItRefusesToRecordPastItsDepthAndToTakeNothing) {
  Context& ctx = this->ctx();
  const Tensor loss = ctx.allocate(Shape{1}, DType::kFloat32, MemoryCategory::kActivations);
  fill_zero(ctx, loss);
  StepReadback readback(ctx, {loss}, 1);
  EXPECT_EQ(error_of([&] { readback.take(); }), "StepReadback: take() with no step recorded and unread");
  readback.record(1);
  readback.record(2);
  EXPECT_EQ(error_of([&] { readback.record(3); }),
            "StepReadback: step 3 recorded with 2 steps unread (depth 1); take one first");
  EXPECT_EQ(readback.take().step, 1);
  EXPECT_EQ(error_of([&] { (void)readback.take().ints(0); }), "Readout::ints: copy 0 is float32");
  EXPECT_EQ(error_of([&] { StepReadback bad(ctx, {loss}, -1); }), "StepReadback: depth must be 0 or more, got -1");
  EXPECT_EQ(error_of([&] { StepReadback bad(ctx, {Tensor()}, 0); }),
            cat("StepReadback: ", Tensor().str(), " is not a tensor on ", ctx.device().str()));
  const Tensor labels = ctx.allocate(Shape{2}, DType::kInt32, MemoryCategory::kData);
  fill_zero(ctx, labels);
  StepReadback ints(ctx, {labels}, 0);
  ints.record(1);
  EXPECT_EQ(error_of([&] { (void)ints.take().floats(0); }), "Readout::floats: copy 0 is int32");
}

GLASSBOX_INSTANTIATE_ON_DEVICES(StepReadbackTest);

// A non-finite loss read a step late names its step, and says that the
// places it names are the graph's after the later step.
TEST(StepReadback, ALateNonFiniteLossSaysWhatItDescribes) {
  Context ctx = Context::cpu();
  Graph graph = find_net("LeNet").build(8);
  graph.compile(ctx);
  fill_synthetic_batch(ctx, graph, 10);
  const Tensor& weight = graph.node("conv2").params[0];
  std::vector<float> values = to_vector<float>(ctx, weight);
  values[7] = std::numeric_limits<float>::infinity();
  from_vector<float>(ctx, values, weight);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(error_of([&] { check_loss_value(ctx, graph, 4, nan, 1); }),
            "step 4: the loss is nan (read once step 5 had run; what follows is after it); first non-finite "
            "output: conv2 (Conv2d); non-finite parameters: conv2.weight");
  EXPECT_EQ(error_of([&] { check_loss_value(ctx, graph, 4, nan); }),
            "step 4: the loss is nan; first non-finite output: conv2 (Conv2d); non-finite parameters: conv2.weight");
  EXPECT_EQ(check_loss_value(ctx, graph, 4, 2.5f, 1), 2.5f);
}

}  // namespace
}  // namespace glassbox
