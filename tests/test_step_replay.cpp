// tests/test_step_replay.cpp: Note [Replaying a step] (optim/step_replay.h).
// On the CPU: when a step runs eagerly, is captured or replayed, what changes
// the key, and the errors. On a GPU: a replayed step computes what an eager
// one does, to the bit, through dropout, fp16 loss scaling, a new learning
// rate (without a new capture) and an LSTM's carried state; a step that cannot be captured is
// named and leaves the stream usable.
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "data/synthetic.h"
#include "graph/builder.h"
#include "nets/registry.h"
#include "optim/train_step.h"
#include "tensor/copy.h"
#include "tensor/cuda_graph.h"
#include "tests/support/checks.h"
#include "tests/support/devices.h"

namespace glassbox {
namespace {

// conv -> batch norm -> ReLU -> pool -> dropout -> Linear -> ReLU -> Linear:
// every kind of state a step carries on the device (batch-norm statistics,
// dropout's generator, momentum).
Graph small_net(int batch) {
  GraphBuilder g;
  const Value images = g.input("images", {batch, 3, 8, 8});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  Value x = g.relu(g.batch_norm(g.conv(images, {.out_channels = 8, .kernel = 3, .pad = 1}, "conv"), {}, "bn"), "relu");
  x = g.dropout(g.max_pool(x, {.kernel = 2, .stride = 2}, "pool"), {.p = 0.3f}, "drop");
  x = g.relu(g.linear(g.flatten(x, "flatten"), {.out_features = 16}, "fc1"), "relu_fc");
  return std::move(g).build(g.softmax_cross_entropy(g.linear(x, {.out_features = 5}, "fc2"), labels));
}

ReplayKey key_of(uint64_t graph) { return ReplayKey{.graph = graph}; }

TEST(ReplayPolicy, WarmsUpThenCapturesOnceThenReplays) {
  ReplayPolicy policy(2);
  EXPECT_EQ(policy.next(key_of(1)), ReplayAction::kEager);
  EXPECT_EQ(policy.next(key_of(1)), ReplayAction::kEager);
  EXPECT_EQ(policy.next(key_of(1)), ReplayAction::kCapture);
  EXPECT_EQ(policy.next(key_of(1)), ReplayAction::kCapture) << "no capture succeeded yet";
  policy.captured();
  EXPECT_EQ(policy.next(key_of(1)), ReplayAction::kReplay);
  EXPECT_EQ(policy.next(key_of(1)), ReplayAction::kReplay);
}

TEST(ReplayPolicy, AnotherKeyWarmsUpAndCapturesAgain) {
  ReplayPolicy policy(1);
  EXPECT_EQ(policy.next(key_of(1)), ReplayAction::kEager);
  EXPECT_EQ(policy.next(key_of(1)), ReplayAction::kCapture);
  policy.captured();
  ReplayKey lr = key_of(1);
  lr.options.lr = 0.5f;
  EXPECT_EQ(policy.next(lr), ReplayAction::kEager) << "a new learning rate is not in the captured step";
  EXPECT_EQ(policy.next(lr), ReplayAction::kCapture);
  policy.captured();
  EXPECT_EQ(policy.next(lr), ReplayAction::kReplay);
  EXPECT_EQ(policy.next(key_of(1)), ReplayAction::kEager) << "back to the first key: captured again";
}

TEST(ReplayPolicy, NeedsAWarmUpStep) {
  try {
    ReplayPolicy policy(0);
    ADD_FAILURE() << "a policy without warm-up";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "a replayed step needs at least 1 eager warm-up step before its capture, got 0");
  }
}

// What a captured step holds: another compiled graph, dropout probability, host loss
// scale, optimizer or the context's workspace each make another key; a new
// learning rate does not.
TEST(ReplayKey, ChangesWithWhatACapturedStepHolds) {
  Context ctx = Context::cpu();
  Graph graph = small_net(2);
  graph.compile(ctx);
  Sgd sgd(ctx, graph.parameters(), graph.gradients(), {.lr = 0.1f});
  const ReplayKey first = train_step_key(ctx, graph, sgd, nullptr);
  EXPECT_EQ(train_step_key(ctx, graph, sgd, nullptr), first) << "nothing changed";

  graph.set_dropout(0.3f);
  EXPECT_EQ(train_step_key(ctx, graph, sgd, nullptr), first) << "the same probability";
  graph.set_dropout(0.4f);
  const ReplayKey dropout = train_step_key(ctx, graph, sgd, nullptr);
  EXPECT_NE(dropout.graph, first.graph);
  graph.set_loss_scale(8.0f);
  const ReplayKey scaled = train_step_key(ctx, graph, sgd, nullptr);
  EXPECT_NE(scaled.graph, dropout.graph);
  Graph another = small_net(2);
  another.compile(ctx);
  EXPECT_NE(train_step_key(ctx, another, sgd, nullptr).graph, scaled.graph) << "another graph's buffers";

  const ReplayKey before_lr = train_step_key(ctx, graph, sgd, nullptr);
  sgd.set_lr(0.2f);
  EXPECT_EQ(train_step_key(ctx, graph, sgd, nullptr), before_lr) << "the update reads the learning rate on the device";
  Sgd other(ctx, graph.parameters(), graph.gradients(), {.lr = 0.2f});
  EXPECT_NE(train_step_key(ctx, graph, other, nullptr).optimizer, train_step_key(ctx, graph, sgd, nullptr).optimizer);

  // Another graph on the context that needs a larger workspace replaces the
  // one the captured kernels hold.
  const ReplayKey before_workspace = train_step_key(ctx, graph, sgd, nullptr);
  ctx.reserve_workspace(ctx.workspace_bytes() + (size_t{1} << 20));
  EXPECT_NE(train_step_key(ctx, graph, sgd, nullptr).workspace, before_workspace.workspace);
}

TEST(StepReplay, NeedsACudaDevice) {
  Context ctx = Context::cpu();
  try {
    StepReplay replay(ctx);
    ADD_FAILURE() << "a replay on the CPU";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "--cuda-graph needs a CUDA device: a step is replayed as a CUDA graph; this context is cpu");
  }
  try {
    CudaGraph::capture(ctx, [] {});
    ADD_FAILURE() << "a capture on the CPU";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "CUDA graphs need a CUDA device; this context is cpu");
  }
}

TEST(StepReplay, RefusesAGraphThatTimesOrWaitsAfterItsLayers) {
  Context ctx = Context::cpu();
  Graph graph = small_net(2);
  graph.compile(ctx, {.layer_timing = true});
  try {
    check_replayable(graph);
    ADD_FAILURE() << "a timed graph passed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("times its layers"), std::string::npos) << e.what();
  }
  Graph synced = small_net(2);
  synced.compile(ctx, {.sync_each_layer = true});
  try {
    check_replayable(synced);
    ADD_FAILURE() << "a graph that waits after each layer passed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("sync_each_layer"), std::string::npos) << e.what();
  }
  Graph plain = small_net(2);
  plain.compile(ctx);
  EXPECT_NO_THROW(check_replayable(plain));
}

// What `steps` training steps leave, eager or through a replay: the
// parameters and the last loss (and the replay's counts).
struct Trained {
  std::vector<float> parameters;
  float loss = 0.0f;
  ReplayCounts counts;
};

// `net`: small_net at batch 4 where null.
Trained train(Context& ctx, Precision precision, int steps, bool replayed, float second_lr = 0.0f,
              const NetSpec* net = nullptr) {
  // Each run the same: dropout's generator is seeded from the context's
  // generator at compile, and deterministic algorithms give the same bits
  // whatever cuDNN's timing.
  ctx.rng().seed(11);
  Graph graph = net != nullptr ? net->build(2) : small_net(4);
  graph.compile(ctx, {.layers = {.deterministic = true}, .precision = precision});
  fill_synthetic_batch(ctx, graph, net != nullptr ? net->classes : 5);
  Sgd sgd(ctx, graph.parameters(), graph.gradients(), {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f},
          graph.working_parameters());
  std::optional<LossScaler> scaler;
  if (precision == Precision::kFp16) scaler.emplace(ctx, LossScaleOptions{});
  std::optional<StepReplay> replay;
  if (replayed) replay.emplace(ctx);
  for (int step = 0; step < steps; ++step) {
    if (second_lr > 0.0f && step == steps / 2) sgd.set_lr(second_lr);
    if (replay) {
      train_step(ctx, graph, sgd, *replay, scaler ? &*scaler : nullptr);
    } else {
      train_step(ctx, graph, sgd, nullptr, scaler ? &*scaler : nullptr);
    }
  }
  Trained t{.parameters = to_vector<float>(ctx, graph.parameters()), .loss = graph.loss(ctx), .counts = {}};
  if (replay) t.counts = replay->counts();
  return t;
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0 && differ++ == 0) first = i;
  }
  EXPECT_EQ(differ, 0u) << what << ": first at " << first << ": " << a[first] << " against " << b[first];
}

// Six steps: one eager warm-up, one captured, four replayed. The same
// kernels on the same buffers: the same bits as six eager steps, in fp32,
// bf16 and fp16 (whose loss scaling decides on the device).
TEST(StepReplay, ReplayedStepsComputeWhatEagerStepsDo) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  for (Precision precision : {Precision::kFp32, Precision::kBf16, Precision::kFp16}) {
    const std::string what(flag_name_of(precision));
    const Trained eager = train(ctx, precision, 6, false);
    const Trained replayed = train(ctx, precision, 6, true);
    expect_same_bits(replayed.parameters, eager.parameters, what + " parameters");
    EXPECT_EQ(replayed.loss, eager.loss) << what;
    EXPECT_EQ(replayed.counts.eager, 1) << what;
    EXPECT_EQ(replayed.counts.captures, 1) << what;
    EXPECT_EQ(replayed.counts.replays, 4) << what;
    EXPECT_GT(replayed.counts.nodes, 20u) << what << ": a step is more than a few kernels";
  }
}

// A scaler on a graph of another precision is refused before the step
// points the graph at its scale: the graph then trains without one exactly
// as a graph that never met it.
TEST(StepReplay, AScalerForAnotherPrecisionIsRefusedBeforeTheGraphUsesIt) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  const Trained eager = train(ctx, Precision::kBf16, 2, false);
  ctx.rng().seed(11);
  Graph graph = small_net(4);
  graph.compile(ctx, {.layers = {.deterministic = true}, .precision = Precision::kBf16});
  fill_synthetic_batch(ctx, graph, 5);
  Sgd sgd(ctx, graph.parameters(), graph.gradients(), {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f},
          graph.working_parameters());
  LossScaler scaler(ctx, LossScaleOptions{});
  StepReplay replay(ctx);
  try {
    train_step(ctx, graph, sgd, replay, &scaler);
    ADD_FAILURE() << "a loss scaler on a bf16 graph passed";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "train_step: loss scaling is for fp16 graphs; this one is bf16");
  }
  for (int step = 0; step < 2; ++step) train_step(ctx, graph, sgd);
  expect_same_bits(to_vector<float>(ctx, graph.parameters()), eager.parameters, "parameters after the refusal");
}

// A new learning rate mid-run reaches the replayed update through device
// memory: no second capture, and the same bits as eager steps.
TEST(StepReplay, ANewLearningRateReachesTheReplayedStep) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  const Trained eager = train(ctx, Precision::kFp32, 8, false, 0.01f);
  const Trained replayed = train(ctx, Precision::kFp32, 8, true, 0.01f);
  expect_same_bits(replayed.parameters, eager.parameters, "parameters");
  EXPECT_EQ(replayed.counts.captures, 1);
  EXPECT_EQ(replayed.counts.replays, 6);
  const Trained constant = train(ctx, Precision::kFp32, 8, true);
  EXPECT_NE(constant.parameters, replayed.parameters) << "the new rate changed nothing";
}

// An LSTM language model: cuDNN's RNN calls run on helper streams of its own,
// joined by events, and the state carried from step to step is a copy queued
// in the step. Captured and replayed, six steps give what six eager steps do:
// the same bits where two eager runs agree to the bit (cuDNN does not list its
// RNN calls among the reproducible ones, nor among the others), else within
// 1e-5 of the largest value, and the test says which it checked.
TEST(StepReplay, AnLstmLanguageModelReplaysWhatItRunsEagerly) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  const NetSpec net = find_net("LSTMSmall");
  for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
    const std::string what(flag_name_of(precision));
    const Trained eager = train(ctx, precision, 6, false, 0.0f, &net);
    const Trained again = train(ctx, precision, 6, false, 0.0f, &net);
    const Trained replayed = train(ctx, precision, 6, true, 0.0f, &net);
    const bool reproducible = std::memcmp(eager.parameters.data(), again.parameters.data(),
                                          eager.parameters.size() * sizeof(float)) == 0;
    std::cout << "[ NOTE     ] " << what << ": two eager runs of the LSTM "
              << (reproducible ? "agree to the bit" : "differ: the replay is compared within 1e-5") << "\n";
    if (reproducible) {
      expect_same_bits(replayed.parameters, eager.parameters, what + " parameters");
      EXPECT_EQ(replayed.loss, eager.loss) << what;
    } else {
      testing::expect_close(replayed.parameters, eager.parameters, 1e-5, what + " parameters");
    }
    EXPECT_EQ(replayed.counts.captures, 1) << what;
    EXPECT_EQ(replayed.counts.replays, 4) << what;
  }
}

// The medium language model has dropout between its LSTM layers (cuDNN's own,
// in the RNN call) and around them (Dropout layers): each step draws new
// masks from generator states on the device, which the kernels advance. A
// replay that froze them (the masks of the captured step each time) would
// train otherwise than six eager steps do, which draw six sets.
TEST(StepReplay, AnLstmWithDropoutDrawsNewMasksInEachReplay) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  const NetSpec net = find_net("LSTM");
  const Trained eager = train(ctx, Precision::kFp32, 6, false, 0.0f, &net);
  const Trained again = train(ctx, Precision::kFp32, 6, false, 0.0f, &net);
  const Trained replayed = train(ctx, Precision::kFp32, 6, true, 0.0f, &net);
  const bool reproducible = std::memcmp(eager.parameters.data(), again.parameters.data(),
                                        eager.parameters.size() * sizeof(float)) == 0;
  std::cout << "[ NOTE     ] two eager runs of the LSTM with dropout "
            << (reproducible ? "agree to the bit" : "differ: the replay is compared within 1e-5") << "\n";
  if (reproducible) {
    expect_same_bits(replayed.parameters, eager.parameters, "parameters");
    EXPECT_EQ(replayed.loss, eager.loss);
  } else {
    testing::expect_close(replayed.parameters, eager.parameters, 1e-5, "parameters");
  }
  EXPECT_EQ(replayed.counts.captures, 1);
  EXPECT_EQ(replayed.counts.replays, 4);
}

// A call that waits for the device cannot be captured: the error says where,
// and the stream works afterwards.
TEST(StepReplay, AStepThatWaitsForTheDeviceIsRefusedByName) {
  GLASSBOX_REQUIRE_CUDA();
  Context ctx = Context::cuda();
  try {
    CudaGraph::capture(ctx, [&] { ctx.synchronize(); });
    ADD_FAILURE() << "a synchronising step was captured";
  } catch (const Error& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("while capturing a CUDA graph: ")) << e.what();
  }
  const std::vector<float> values = {1.0f, 2.0f, 3.0f};
  Tensor t = ctx.allocate(Shape{3}, DType::kFloat32, MemoryCategory::kActivations);
  from_vector<float>(ctx, values, t);
  EXPECT_EQ(to_vector<float>(ctx, t), values);
}

}  // namespace
}  // namespace glassbox
