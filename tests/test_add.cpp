// tests/test_add.cpp
#include <gtest/gtest.h>

#include "layers/add.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

std::unique_ptr<Layer> make_add() { return std::make_unique<Add>("res"); }

TEST(Add, SumsEveryInput) {
  Context ctx = Context::cpu();
  Add add("res");
  testing::LayerHarness h(ctx, add, {Shape{1, 3}, Shape{1, 3}, Shape{1, 3}});
  h.write(h.inputs[0], {1.0f, 2.0f, 3.0f});
  h.write(h.inputs[1], {10.0f, 20.0f, 30.0f});
  h.write(h.inputs[2], {100.0f, 200.0f, 300.0f});
  h.poison(h.output);
  h.forward();
  EXPECT_EQ(h.read(h.output), (std::vector<float>{111.0f, 222.0f, 333.0f}));
}

TEST(Add, SumsLargeTensorsAcrossThreads) {
  Context ctx = Context::cpu();
  Add add("res");
  testing::LayerHarness h(ctx, add, {Shape{4, 64, 30, 30}, Shape{4, 64, 30, 30}});
  h.randomize(2);
  h.poison(h.output);
  h.forward();
  const std::vector<float> a = h.read(h.inputs[0]), b = h.read(h.inputs[1]), y = h.read(h.output);
  std::vector<float> expected(a.size());
  for (size_t i = 0; i < a.size(); ++i) expected[i] = a[i] + b[i];
  EXPECT_EQ(y, expected);
}

TEST(Add, DescribesItsInputCount) {
  Add add("res");
  add.bind(std::vector<Shape>{Shape{2, 3}, Shape{2, 3}});
  EXPECT_EQ(add.describe(), "2 inputs");
  add.bind(std::vector<Shape>{Shape{2, 3}, Shape{2, 3}, Shape{2, 3}});
  EXPECT_EQ(add.describe(), "3 inputs");
}

TEST(Add, NamesTheFirstMismatchingInput) {
  Add add("res2a");
  try {
    add.bind(std::vector<Shape>{Shape{2, 64, 8, 8}, Shape{2, 64, 8, 8}, Shape{2, 32, 8, 8}, Shape{2, 16, 8, 8}});
    FAIL() << "accepted mismatching shapes";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(),
                 "res2a (Add): input 2 has shape (2, 32, 8, 8), expected (2, 64, 8, 8) (the shape of input 0)");
  }
}

TEST(Add, NeedsAtLeastTwoInputs) {
  Add add("res");
  try {
    add.bind(std::vector<Shape>{Shape{2, 3}});
    FAIL() << "accepted one input";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "res (Add): takes 2 to 64 input(s), got 1");
  }
}

TEST(Add, GradientsMatchFiniteDifferences) {
  testing::check_gradients(make_add, {Shape{2, 3, 4}, Shape{2, 3, 4}, Shape{2, 3, 4}});
}

TEST(Add, CudaMatchesCpu) {
  testing::check_cpu_cuda_parity(make_add, {Shape{4, 8, 13, 11}, Shape{4, 8, 13, 11}, Shape{4, 8, 13, 11}},
                                 {.tolerance = 0.0});
}

// Add(x, x): one tensor feeds both slots, and one gradient tensor receives
// both: slot 0 writes, slot 1 adds, so dx = 2 dy.
class AddDeviceTest : public testing::DeviceTest {};

TEST_P(AddDeviceTest, SameTensorTwice) {
  Add add("double");
  testing::LayerHarness h(ctx(), add, {Shape{3, 5, 7, 11}, Shape{3, 5, 7, 11}});
  h.randomize(5);
  h.inputs[1] = h.inputs[0];
  h.input_grads[1] = h.input_grads[0];
  h.forward();
  const std::vector<float> x = h.read(h.inputs[0]), dy = h.read(h.output_grad);
  std::vector<float> twice_x(x.size()), twice_dy(dy.size());
  for (size_t i = 0; i < x.size(); ++i) twice_x[i] = 2.0f * x[i];
  for (size_t i = 0; i < dy.size(); ++i) twice_dy[i] = 2.0f * dy[i];
  EXPECT_EQ(h.read(h.output), twice_x);
  h.poison(h.input_grads[0]);
  h.backward({GradMode::kWrite, GradMode::kAdd});
  EXPECT_EQ(h.read(h.input_grads[0]), twice_dy);
}

GLASSBOX_INSTANTIATE_ON_DEVICES(AddDeviceTest);

}  // namespace
}  // namespace glassbox
