// tests/test_flatten.cpp
#include <gtest/gtest.h>

#include "layers/flatten.h"
#include "tests/support/checks.h"

namespace glassbox {
namespace {

std::unique_ptr<Layer> make_flatten() { return std::make_unique<Flatten>("flat"); }

TEST(Flatten, KeepsTheBatchAndMultipliesTheRest) {
  Flatten flat("flat");
  EXPECT_EQ(flat.bind(std::vector<Shape>{Shape{8, 512, 7, 7}}), (Shape{8, 25088}));
  EXPECT_EQ(flat.bind(std::vector<Shape>{Shape{4, 10}}), (Shape{4, 10}));
  EXPECT_EQ(flat.bind(std::vector<Shape>{Shape{2, 3, 5}}), (Shape{2, 15}));
}

TEST(Flatten, RejectsRankOne) {
  Flatten flat("flat");
  try {
    flat.bind(std::vector<Shape>{Shape{5}});
    FAIL() << "accepted a rank-1 input";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "flat (Flatten): expects (N, d1, ...) input of rank 2 or more, got (5)");
  }
}

TEST(Flatten, ForwardKeepsElementOrder) {
  Context ctx = Context::cpu();
  Flatten flat("flat");
  testing::LayerHarness h(ctx, flat, {Shape{2, 3, 40, 300}});  // 72000 elements: several threads' chunks
  h.randomize(3);
  h.poison(h.output);
  h.forward();
  EXPECT_EQ(h.read(h.output), h.read(h.inputs[0]));
}

TEST(Flatten, BackwardWritesOrAddsTheGradient) {
  Context ctx = Context::cpu();
  Flatten flat("flat");
  testing::LayerHarness h(ctx, flat, {Shape{2, 3, 40, 300}});
  h.randomize(4);
  h.forward();
  h.poison(h.input_grads[0]);
  h.backward();
  const std::vector<float> dy = h.read(h.output_grad);
  EXPECT_EQ(h.read(h.input_grads[0]), dy);
  h.backward({GradMode::kAdd});
  std::vector<float> twice = dy;
  for (float& v : twice) v *= 2.0f;
  EXPECT_EQ(h.read(h.input_grads[0]), twice);
}

TEST(Flatten, GradientsMatchFiniteDifferences) { testing::check_gradients(make_flatten, {Shape{2, 3, 4, 5}}); }

TEST(Flatten, CudaMatchesCpu) {
  testing::check_cpu_cuda_parity(make_flatten, {Shape{4, 16, 7, 9}}, {.tolerance = 0.0});
}

}  // namespace
}  // namespace glassbox
