// tests/test_relu.cpp
#include <gtest/gtest.h>

#include "layers/relu.h"
#include "tests/support/checks.h"

namespace glassbox {
namespace {

std::unique_ptr<Layer> make_relu() { return std::make_unique<ReLU>("relu1"); }

// Values at least 0.05 away from the kink at 0, so a finite difference of
// 1e-2 never crosses it.
void away_from_zero(testing::LayerHarness& h) {
  std::vector<float> x = h.read(h.inputs[0]);
  for (float& v : x) v = v >= 0 ? v + 0.05f : v - 0.05f;
  h.write(h.inputs[0], x);
}

TEST(ReLU, ForwardClampsNegatives) {
  Context ctx = Context::cpu();
  ReLU relu("relu");
  testing::LayerHarness h(ctx, relu, {Shape{1, 4}});
  h.write(h.inputs[0], {-1.0f, 0.0f, 2.0f, -0.5f});
  h.forward();
  EXPECT_EQ(h.read(h.output), (std::vector<float>{0.0f, 0.0f, 2.0f, 0.0f}));
}

TEST(ReLU, GradientsMatchFiniteDifferences) {
  testing::check_gradients(make_relu, {Shape{2, 3, 5, 7}}, {.fill = away_from_zero});
}

TEST(ReLU, CudaMatchesCpu) {
  testing::check_cpu_cuda_parity(make_relu, {Shape{4, 8, 13, 11}}, {.tolerance = 0.0});
}

}  // namespace
}  // namespace glassbox
