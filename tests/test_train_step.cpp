// tests/test_train_step.cpp: the one training step every program runs.
#include <gtest/gtest.h>

#include "data/synthetic.h"
#include "nets/nets.h"
#include "optim/train_step.h"
#include "tensor/copy.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

class TrainStepTest : public testing::DeviceTest {};

// Each step starts from zero gradients: two steps on one batch leave the
// gradient of the second step alone, not the sum of both; and the update is
// SGD's on that gradient.
TEST_P(TrainStepTest, ZeroesForwardsBackwardsAndUpdates) {
  Context& c = ctx();
  Graph graph = lenet(8);
  graph.compile(c);
  fill_synthetic_batch(c, graph, 10);
  Sgd sgd(c, graph.parameters(), graph.gradients(), {.lr = 0.01f, .momentum = 0.0f, .weight_decay = 0.0f});

  const std::vector<float> w0 = to_vector<float>(c, graph.parameters());
  train_step(c, graph, sgd);
  const float loss1 = graph.loss(c);
  const std::vector<float> g1 = to_vector<float>(c, graph.gradients());
  const std::vector<float> w1 = to_vector<float>(c, graph.parameters());
  for (size_t i = 0; i < w0.size(); i += 97) ASSERT_NEAR(w1[i], w0[i] - 0.01f * g1[i], 1e-6) << "parameter " << i;

  // The gradient of step 2 is that of the loss at w1: recompute it alone.
  train_step(c, graph, sgd);
  const std::vector<float> g2 = to_vector<float>(c, graph.gradients());
  from_vector<float>(c, w1, graph.parameters());
  graph.zero_grad(c);
  graph.forward(c, Phase::kTraining);
  graph.backward(c);
  const std::vector<float> expected = to_vector<float>(c, graph.gradients());
  for (size_t i = 0; i < g2.size(); ++i) ASSERT_NEAR(g2[i], expected[i], 1e-6) << "gradient " << i;
  EXPECT_LT(graph.loss(c), loss1);
}

GLASSBOX_INSTANTIATE_ON_DEVICES(TrainStepTest);

}  // namespace
}  // namespace glassbox
