// tests/test_train_step.cpp: the one training step every program runs.
#include <gtest/gtest.h>

#include "data/synthetic.h"
#include "nets/nets.h"
#include "optim/train_step.h"
#include "tensor/copy.h"
#include "tests/support/data_files.h"
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

// An optimizer steps the buffers it was made with: one made for another
// graph would update that graph, and one without a 16-bit graph's working
// copy would leave its forward reading the first weights forever.
TEST(TrainStep, RefusesAnOptimizerOfOtherBuffers) {
  Context c = Context::cpu();
  Graph graph = lenet(2), other = lenet(2);
  graph.compile(c);
  other.compile(c);
  fill_synthetic_batch(c, graph, 10);
  Sgd others(c, other.parameters(), other.gradients(), {});
  EXPECT_EQ(testing::message_of<ConfigError>([&] { train_step(c, graph, others); }),
            "train_step: the optimizer updates other buffers than this graph's parameters() and gradients() "
            "(make the Sgd from the graph it steps)");

  Graph bf16 = lenet(2);
  bf16.compile(c, {.precision = Precision::kBf16});
  fill_synthetic_batch(c, bf16, 10);
  Sgd without_copy(c, bf16.parameters(), bf16.gradients(), {});
  EXPECT_EQ(testing::message_of<ConfigError>([&] { train_step(c, bf16, without_copy); }),
            "train_step: this bf16 graph's forward reads its 16-bit working_parameters(), which the optimizer does "
            "not write (pass them to the Sgd)");
  Sgd with_copy(c, bf16.parameters(), bf16.gradients(), {}, bf16.working_parameters());
  EXPECT_EQ(testing::message_of<ConfigError>([&] { train_step(c, bf16, with_copy); }), "no exception");

  Sgd writing_a_copy(c, graph.parameters(), graph.gradients(), {}, bf16.working_parameters());
  EXPECT_EQ(testing::message_of<ConfigError>([&] { train_step(c, graph, writing_a_copy); }),
            "train_step: this fp32 graph's forward reads no 16-bit copy, and the optimizer writes one");
}

}  // namespace
}  // namespace glassbox
