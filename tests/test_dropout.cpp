// tests/test_dropout.cpp: the mask's statistics and reproducibility, backward
// through the forward's mask, inference, the probability changed between
// steps (Dropout::set_probability, Graph::set_dropout), and the CUDA path.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <utility>

#include "graph/builder.h"
#include "layers/dropout.h"
#include "tensor/copy.h"
#include "tests/support/checks.h"
#include "tests/support/data_files.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

// What every dropout forward must satisfy, on either backend: each y is 0 or
// x / (1 - p), and about 1 - p of them are kept. Returns the kept fraction.
double expect_dropout_structure(const std::vector<float>& x, const std::vector<float>& y, float p) {
  const float scale = 1.0f / (1.0f - p);
  size_t kept = 0, bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (y[i] == 0.0f) continue;
    ++kept;
    // Written as "not within": a NaN (an element never written) is bad, not kept and scaled.
    if (!(std::fabs(y[i] - x[i] * scale) <= 1e-6f * (1.0f + std::fabs(x[i] * scale)))) ++bad;
  }
  EXPECT_EQ(bad, 0u) << "elements neither 0 nor x / (1 - p)";
  return static_cast<double>(kept) / static_cast<double>(x.size());
}

// dx must be dy * y / x: the mask forward used (x is never exactly 0 here).
void expect_backward_uses_forward_mask(const testing::LayerHarness& h) {
  const std::vector<float> x = h.read(h.inputs[0]), y = h.read(h.output);
  const std::vector<float> dy = h.read(h.output_grad), dx = h.read(h.input_grads[0]);
  std::vector<float> expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) expected[i] = x[i] != 0.0f ? dy[i] * (y[i] / x[i]) : dx[i];
  testing::expect_close(dx, expected, 1e-5, "dx against dy * y / x");
}

TEST(Dropout, RejectsPOutsideZeroToOne) {
  const std::pair<float, const char*> cases[] = {
      {1.0f, "drop6 (Dropout): p must be in [0, 1), got 1"},
      {-0.25f, "drop6 (Dropout): p must be in [0, 1), got -0.25"},
      {std::nanf(""), "drop6 (Dropout): p must be in [0, 1), got nan"},
  };
  for (const auto& [p, message] : cases) {
    try {
      Dropout drop("drop6", {.p = p});
      ADD_FAILURE() << "accepted p = " << p;
    } catch (const ConfigError& e) {
      EXPECT_STREQ(e.what(), message);
    }
  }
  EXPECT_NO_THROW(Dropout("drop", {.p = 0.0f}));
  EXPECT_NO_THROW(Dropout("drop", {.p = 0.999f}));
}

TEST(Dropout, Describes) {
  EXPECT_EQ(Dropout("drop", {}).describe(), "p 0.5");
  EXPECT_EQ(Dropout("drop", {.p = 0.25f}).describe(), "p 0.25");
}

TEST(Dropout, KeepsAboutOneMinusPAndScalesTheKept) {
  Context ctx = Context::cpu(11);
  Dropout drop("drop", {.p = 0.3f});
  testing::LayerHarness h(ctx, drop, {Shape{64, 1001}});  // odd count: the last element has no pair
  h.randomize(1);
  h.poison(h.output);
  h.forward();
  const double kept = expect_dropout_structure(h.read(h.inputs[0]), h.read(h.output), 0.3f);
  EXPECT_NEAR(kept, 0.7, 0.01);  // sd is 0.0018 for 64064 draws
}

TEST(Dropout, SameSeedSameMaskAndFreshMaskEveryForward) {
  auto run = [](uint64_t seed, int forwards) {
    Context ctx = Context::cpu(seed);
    Dropout drop("drop", {.p = 0.5f});
    testing::LayerHarness h(ctx, drop, {Shape{8, 4099}});
    h.randomize(1);
    for (int i = 0; i < forwards; ++i) h.forward();
    return h.read(h.output);
  };
  EXPECT_EQ(run(5, 1), run(5, 1));
  EXPECT_NE(run(5, 1), run(6, 1));
  EXPECT_NE(run(5, 1), run(5, 2));
}

// Note [Dropout mask bits]: replica r of R (Context::replica) at batch B
// draws rows [r x B, (r + 1) x B) of the mask that one process at R x B
// draws, so data-parallel training takes one process's steps. An odd count
// on an odd replica splits the pairs of bits between replicas.
TEST(Dropout, DataParallelReplicasDrawTheMasksOfOneProcess) {
  auto kept = [](Context::Replica replica, Shape shape) {
    Context ctx = Context::cpu(11);
    ctx.set_replica(replica);
    Dropout drop("drop", {.p = 0.5f});
    testing::LayerHarness h(ctx, drop, {shape});
    h.randomize(3);
    h.forward();
    std::vector<bool> mask;
    for (float v : h.read(h.output)) mask.push_back(v != 0.0f);
    return mask;
  };
  for (const int64_t features : {1001, 333}) {
    for (const int replicas : {2, 3}) {
      constexpr int64_t kRows = 3;
      const std::vector<bool> whole = kept({}, Shape{replicas * kRows, features});
      for (int r = 0; r < replicas; ++r) {
        const auto from = whole.begin() + r * kRows * features;
        EXPECT_EQ(kept({.index = r, .count = replicas}, Shape{kRows, features}),
                  std::vector<bool>(from, from + kRows * features))
            << "replica " << r << " of " << replicas << ", " << features << " features";
      }
    }
  }
  Context ctx = Context::cpu();
  EXPECT_EQ(testing::message_of<ConfigError>([&] { ctx.set_replica({.index = 2, .count = 2}); }),
            "replica 2 of 2: the index must be in [0, count)");
}

TEST(Dropout, MaskDoesNotDependOnThreadCount) {
  const int threads = omp_get_max_threads();
  auto run = [](int thread_count) {
    omp_set_num_threads(thread_count);
    Context ctx = Context::cpu(3);
    Dropout drop("drop", {.p = 0.6f});
    testing::LayerHarness h(ctx, drop, {Shape{16, 12345}});
    h.randomize(2);
    h.forward();
    return h.read(h.output);
  };
  const std::vector<float> one = run(1), three = run(3), eight = run(8);
  omp_set_num_threads(threads);
  EXPECT_EQ(one, three);
  EXPECT_EQ(one, eight);
}

TEST(Dropout, BackwardUsesTheForwardMask) {
  Context ctx = Context::cpu();
  Dropout drop("drop", {.p = 0.4f});
  testing::LayerHarness h(ctx, drop, {Shape{32, 3001}});
  h.randomize(4);
  h.forward();
  h.poison(h.input_grads[0]);
  h.backward();
  expect_backward_uses_forward_mask(h);
}

TEST(Dropout, InferenceIsTheIdentity) {
  Context ctx = Context::cpu();
  Dropout drop("drop", {.p = 0.5f});
  testing::LayerHarness h(ctx, drop, {Shape{4, 70000}});
  h.randomize(7);
  h.poison(h.output);
  h.forward(Phase::kInference);
  EXPECT_EQ(h.read(h.output), h.read(h.inputs[0]));
  h.poison(h.input_grads[0]);
  h.backward();
  const std::vector<float> dy = h.read(h.output_grad);
  EXPECT_EQ(h.read(h.input_grads[0]), dy);
  h.backward({GradMode::kAdd});
  std::vector<float> twice = dy;
  for (float& v : twice) v *= 2.0f;
  EXPECT_EQ(h.read(h.input_grads[0]), twice);
}

TEST(Dropout, PZeroKeepsEverything) {
  Context ctx = Context::cpu();
  Dropout drop("drop", {.p = 0.0f});
  testing::LayerHarness h(ctx, drop, {Shape{3, 1000}});
  h.randomize(8);
  h.forward();
  EXPECT_EQ(h.read(h.output), h.read(h.inputs[0]));
}

// The gradient check reseeds the context's RNG before every forward, so
// every forward draws the same mask.
TEST(Dropout, GradientsMatchFiniteDifferences) {
  testing::check_gradients([] { return std::make_unique<Dropout>("drop", Dropout::Options{.p = 0.4f}); },
                           {Shape{3, 17}});
}

TEST(Dropout, GradientsOverASequence) {
  testing::check_gradients([] { return std::make_unique<Dropout>("drop", Dropout::Options{.p = 0.4f}); },
                           {Shape{3, 2, 5}});
}

// The backends draw different masks, so CUDA is checked for structure, not parity.
TEST(Dropout, CudaKeepsAboutOneMinusPAndBackwardUsesTheMask) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda(0, 11);
  Dropout drop("drop", {.p = 0.3f});
  testing::LayerHarness h(ctx, drop, {Shape{64, 1001}});
  h.randomize(1);
  h.poison(h.output);
  h.forward();
  const std::vector<float> first = h.read(h.output);
  const double kept = expect_dropout_structure(h.read(h.inputs[0]), first, 0.3f);
  EXPECT_NEAR(kept, 0.7, 0.01);
  h.poison(h.input_grads[0]);
  h.backward();
  expect_backward_uses_forward_mask(h);
  // kAdd: onto what is there, with the same mask.
  const std::vector<float> written = h.read(h.input_grads[0]);
  const std::vector<float> start = testing::random_values(h.input_grads[0].numel(), 99);
  h.write(h.input_grads[0], start);
  h.backward({GradMode::kAdd});
  std::vector<float> expected(start.size());
  for (size_t i = 0; i < start.size(); ++i) expected[i] = start[i] + written[i];
  testing::expect_close(h.read(h.input_grads[0]), expected, 1e-6, "dx with GradMode::kAdd");
  // A fresh mask every forward.
  h.forward();
  EXPECT_NE(h.read(h.output), first);
}

// In inference both backends are the identity, so they can be compared.
TEST(Dropout, CudaMatchesCpuInInference) {
  testing::check_cpu_cuda_parity([] { return std::make_unique<Dropout>("drop", Dropout::Options{.p = 0.5f}); },
                                 {Shape{8, 300}}, {.tolerance = 0.0, .phase = Phase::kInference});
}

TEST(Dropout, CudaInferenceIsTheIdentity) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda(0);
  Dropout drop("drop", {.p = 0.5f});
  testing::LayerHarness h(ctx, drop, {Shape{4, 3000}});
  h.randomize(7);
  h.poison(h.output);
  h.forward(Phase::kInference);
  EXPECT_EQ(h.read(h.output), h.read(h.inputs[0]));
  h.poison(h.input_grads[0]);
  h.backward();
  EXPECT_EQ(h.read(h.input_grads[0]), h.read(h.output_grad));
}

TEST(Dropout, SetProbabilityRefusesPOutsideZeroToOneAndKeepsTheOld) {
  Dropout drop("drop6", {.p = 0.5f});
  try {
    drop.set_probability(1.0f);
    FAIL() << "accepted p = 1";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "drop6 (Dropout): p must be in [0, 1), got 1");
  }
  EXPECT_EQ(drop.options().p, 0.5f);
  drop.set_probability(0.25f);
  EXPECT_EQ(drop.describe(), "p 0.25");
}

class DropoutDeviceTest : public testing::DeviceTest {};

// Prepared at p = 0.5, then turned off: a training forward is the identity
// and backward passes dy straight through (written or added), on either
// backend; turned on again, it drops again.
TEST_P(DropoutDeviceTest, PZeroIsTheIdentityForwardAndBackward) {
  Dropout drop("drop", {.p = 0.5f});
  testing::LayerHarness h(ctx(), drop, {Shape{16, 1001}});
  h.randomize(3);
  drop.set_probability(0.0f);
  h.poison(h.output);
  h.forward(Phase::kTraining);
  EXPECT_EQ(h.read(h.output), h.read(h.inputs[0]));
  h.poison(h.input_grads[0]);
  h.backward();
  const std::vector<float> dy = h.read(h.output_grad);
  EXPECT_EQ(h.read(h.input_grads[0]), dy);
  h.backward({GradMode::kAdd});
  std::vector<float> twice = dy;
  for (float& v : twice) v *= 2.0f;
  EXPECT_EQ(h.read(h.input_grads[0]), twice);
  drop.set_probability(0.5f);
  h.forward(Phase::kTraining);
  EXPECT_NEAR(expect_dropout_structure(h.read(h.inputs[0]), h.read(h.output), 0.5f), 0.5, 0.01);
}

// Prepared at p = 0.5, run at 0.25: about 75% kept, scaled by 1 / 0.75, and
// backward through that mask.
TEST_P(DropoutDeviceTest, AQuarterKeepsAboutThreeQuarters) {
  Dropout drop("drop", {.p = 0.5f});
  testing::LayerHarness h(ctx(), drop, {Shape{64, 1001}});
  h.randomize(5);
  drop.set_probability(0.25f);
  h.forward(Phase::kTraining);
  EXPECT_NEAR(expect_dropout_structure(h.read(h.inputs[0]), h.read(h.output), 0.25f), 0.75, 0.01);
  h.poison(h.input_grads[0]);
  h.backward();
  expect_backward_uses_forward_mask(h);
}

// A language model's (T, B, F) sequence: elementwise, so the rank changes
// nothing (cuDNN reads it as (T, B, F, 1)).
TEST_P(DropoutDeviceTest, WorksOnASequence) {
  Dropout drop("drop", {.p = 0.5f});
  testing::LayerHarness h(ctx(), drop, {Shape{20, 8, 301}});
  h.randomize(6);
  h.poison(h.output);
  h.forward(Phase::kTraining);
  EXPECT_NEAR(expect_dropout_structure(h.read(h.inputs[0]), h.read(h.output), 0.5f), 0.5, 0.01);
  h.poison(h.input_grads[0]);
  h.backward();
  expect_backward_uses_forward_mask(h);
  h.poison(h.output);
  h.forward(Phase::kInference);
  EXPECT_EQ(h.read(h.output), h.read(h.inputs[0]));
}

// Changing p must not restart the generator (Note [Changing p keeps the
// generator] in layers/dropout_cuda.cpp). Restarted, the draws would repeat,
// and at a smaller p every element dropped would have been dropped before;
// going on, the masks are independent, and about p_before * p_after of the
// elements are dropped now after being kept before.
TEST_P(DropoutDeviceTest, ChangingPKeepsTheGeneratorGoing) {
  Dropout drop("drop", {.p = 0.5f});
  testing::LayerHarness h(ctx(), drop, {Shape{64, 1001}});
  h.randomize(6);
  h.forward(Phase::kTraining);
  const std::vector<float> before = h.read(h.output);
  drop.set_probability(0.4f);
  h.forward(Phase::kTraining);
  const std::vector<float> after = h.read(h.output);
  size_t newly_dropped = 0;
  for (size_t i = 0; i < before.size(); ++i) newly_dropped += before[i] != 0.0f && after[i] == 0.0f;
  EXPECT_NEAR(static_cast<double>(newly_dropped) / static_cast<double>(before.size()), 0.5 * 0.4, 0.01);
}

// Prepared at p = 0 (a schedule that turns dropout on later), then at 0.5:
// masks drawn from a generator its seed filled (Note [Dropout's states are
// filled at prepare] in layers/dropout_cuda.cpp): about half kept, and each
// forward's mask independent of the last, so about a quarter of the elements
// are dropped by the second after being kept by the first.
TEST_P(DropoutDeviceTest, PreparedAtPZeroThenTurnedOnDrawsFreshMasks) {
  Dropout drop("drop", {.p = 0.0f});
  testing::LayerHarness h(ctx(), drop, {Shape{64, 1001}});
  h.randomize(7);
  drop.set_probability(0.5f);
  h.forward(Phase::kTraining);
  const std::vector<float> first = h.read(h.output);
  EXPECT_NEAR(expect_dropout_structure(h.read(h.inputs[0]), first, 0.5f), 0.5, 0.01);
  h.forward(Phase::kTraining);
  const std::vector<float> second = h.read(h.output);
  size_t newly_dropped = 0;
  for (size_t i = 0; i < first.size(); ++i) newly_dropped += first[i] != 0.0f && second[i] == 0.0f;
  EXPECT_NEAR(static_cast<double>(newly_dropped) / static_cast<double>(first.size()), 0.25, 0.01);
}

GLASSBOX_INSTANTIATE_ON_DEVICES(DropoutDeviceTest);

// At p = 0 both backends compute the identity in training too, so they can be compared.
TEST(Dropout, CudaMatchesCpuAtPZeroInTraining) {
  testing::check_cpu_cuda_parity([] { return std::make_unique<Dropout>("drop", Dropout::Options{.p = 0.0f}); },
                                 {Shape{8, 300}}, {.tolerance = 0.0, .phase = Phase::kTraining});
}

// images (4, 10) -> fc1 (8) -> drop6 -> fc2 (8) -> drop7 -> fc3 (3) -> loss
Graph two_dropouts() {
  GraphBuilder g;
  Value x = g.input("images", {4, 10});
  const Value labels = g.input("labels", {4}, DType::kInt32);
  x = g.dropout(g.linear(x, {.out_features = 8}, "fc1"), {.p = 0.5f}, "drop6");
  x = g.dropout(g.linear(x, {.out_features = 8}, "fc2"), {.p = 0.5f}, "drop7");
  return std::move(g).build(g.softmax_cross_entropy(g.linear(x, {.out_features = 3}, "fc3"), labels));
}

TEST(GraphSetDropout, SetsEveryDropoutLayerOrOneByName) {
  Graph graph = two_dropouts();
  auto p_of = [&](std::string_view name) { return graph.node(name).layer->describe(); };
  EXPECT_EQ(graph.set_dropout(0.25f), 2);
  EXPECT_EQ(p_of("drop6"), "p 0.25");
  EXPECT_EQ(p_of("drop7"), "p 0.25");
  graph.set_dropout("drop7", 0.0f);
  EXPECT_EQ(p_of("drop6"), "p 0.25");
  EXPECT_EQ(p_of("drop7"), "p 0");
  try {
    graph.set_dropout(1.5f);
    FAIL() << "accepted p = 1.5";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "drop6 (Dropout): p must be in [0, 1), got 1.5");
  }
  EXPECT_EQ(p_of("drop6"), "p 0.25") << "a refused p changes no layer";
  EXPECT_EQ(p_of("drop7"), "p 0");
  try {
    graph.set_dropout("fc2", 0.1f);
    FAIL() << "set dropout on a linear layer";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "set_dropout: 'fc2' is not a Dropout layer of the graph; dropout layers: drop6, drop7");
  }
}

TEST(GraphSetDropout, AGraphWithoutDropoutHasNone) {
  GraphBuilder g;
  const Value logits = g.linear(g.input("images", {2, 4}), {.out_features = 3}, "fc");
  Graph graph = std::move(g).build(g.softmax_cross_entropy(logits, g.input("labels", {2}, DType::kInt32)));
  EXPECT_EQ(graph.set_dropout(0.1f), 0);
  try {
    graph.set_dropout("drop6", 0.1f);
    FAIL() << "found a dropout layer in a graph without one";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "set_dropout: 'drop6' is not a Dropout layer of the graph; dropout layers: none");
  }
}

// Compiled at p = 0.5, run at 0: a training step computes what an inference
// forward computes, and the same every time.
TEST(GraphSetDropout, PZeroMakesATrainingForwardDeterministic) {
  Context ctx = Context::cpu();
  Graph graph = two_dropouts();
  graph.compile(ctx);
  from_vector<float>(ctx, testing::random_values(40, 9), graph.input("images"));
  from_vector<int>(ctx, std::vector<int>{0, 1, 2, 1}, graph.input("labels"));
  graph.forward(ctx, Phase::kInference);
  const float inference = graph.loss(ctx);
  graph.forward(ctx, Phase::kTraining);
  EXPECT_NE(graph.loss(ctx), inference) << "dropout at 0.5 changes the loss";
  graph.set_dropout(0.0f);
  graph.forward(ctx, Phase::kTraining);
  EXPECT_EQ(graph.loss(ctx), inference);
  graph.forward(ctx, Phase::kTraining);
  EXPECT_EQ(graph.loss(ctx), inference);
}

}  // namespace
}  // namespace glassbox
