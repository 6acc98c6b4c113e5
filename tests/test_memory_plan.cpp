// tests/test_memory_plan.cpp: memory reuse by liveness (graph/memory_plan.h)
// and inference-only plans: the plan itself never gives one byte to two
// tensors alive at once, reuse changes no result, and it saves what it says.
#include <gtest/gtest.h>

#include <random>

#include "data/synthetic.h"
#include "graph/builder.h"
#include "graph/memory_plan.h"
#include "nets/registry.h"
#include "optim/sgd.h"
#include "tensor/copy.h"
#include "tests/support/harness.h"

namespace glassbox {
namespace {

MemoryPlan plan_of(const Graph& graph, Phase phase) { return plan_activations(graph, phase); }

TEST(PlaceBlocks, BlocksAliveAtDifferentTimesShareAndOthersDoNot) {
  const std::vector<Block> blocks = {{1024, {0, 1}}, {512, {2, 3}}, {256, {1, 2}}};
  const ArenaLayout layout = place_blocks(blocks, MemoryReuse::kOn);
  EXPECT_EQ(layout.offsets[0], 0u);
  EXPECT_EQ(layout.offsets[1], 0u) << "alive after block 0 ends: its memory is free again";
  EXPECT_EQ(layout.offsets[2], 1024u) << "alive with both others";
  EXPECT_EQ(layout.total, 1280u);
  EXPECT_EQ(find_overlap(blocks, layout), "");
  EXPECT_EQ(place_blocks(blocks, MemoryReuse::kOff).total, 1792u);
}

TEST(PlaceBlocks, RandomLifetimesNeverShareMemoryWhileAlive) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<Block> blocks(40);
    for (Block& b : blocks) {
      const int first = static_cast<int>(rng() % 60);
      b = {plan_aligned(1 + rng() % 5000), {first, first + static_cast<int>(rng() % 20)}};
    }
    const ArenaLayout layout = place_blocks(blocks, MemoryReuse::kOn);
    ASSERT_EQ(find_overlap(blocks, layout), "") << "trial " << trial;
    size_t sum = 0;
    for (const Block& b : blocks) sum += b.bytes;
    EXPECT_LE(layout.total, sum);
  }
}

TEST(PlaceBlocks, TheCheckFindsTwoLiveBlocksSharingMemory) {
  const std::vector<Block> blocks = {{512, {0, 4}}, {512, {3, 5}}};
  const ArenaLayout bad{{0, 256}, 768};
  EXPECT_EQ(find_overlap(blocks, bad), "blocks 0 [0, 512) alive 0..4 and 1 [256, 768) alive 3..5 share memory");
}

// Every network's plan, training and inference, and training with the
// images' gradient (CompileOptions::input_gradients): checked block by block.
TEST(MemoryPlan, NoNetworkPlanGivesOneByteToTwoLiveTensors) {
  const std::vector<std::string> images = {"images"};
  for (const NetSpec& net : all_nets()) {
    const Graph graph = net.build(2);
    for (Phase phase : {Phase::kTraining, Phase::kInference}) {
      const MemoryPlan plan = plan_of(graph, phase);
      EXPECT_EQ(find_overlap(plan.value_blocks, plan.values), "") << net.name;
      EXPECT_EQ(find_overlap(plan.grad_blocks, plan.grads), "") << net.name;
      EXPECT_LE(plan.values.total, plan.values_without_reuse) << net.name;
      // The language models are a short chain whose training plan keeps every
      // value for backward (an LSTM's input, the decoder's): nothing to share.
      if (!net.language_model) {
        EXPECT_LT(plan.values.total, plan.values_without_reuse) << net.name;
      }
    }
    if (net.language_model) continue;  // int32 tokens have no gradient to ask for
    const MemoryPlan with_input = plan_activations(graph, Phase::kTraining, MemoryReuse::kOn, images);
    EXPECT_EQ(find_overlap(with_input.value_blocks, with_input.values), "") << net.name << " with input gradients";
    EXPECT_EQ(find_overlap(with_input.grad_blocks, with_input.grads), "") << net.name << " with input gradients";
  }
}

// What reuse saves, on the plan (batch 1, no memory touched). VGG16 at batch
// 1: activations 60.5 MB (114.7 MB without reuse), their gradients 25.7 MB
// (114.7 MB), a forward-only plan 25.7 MB. VGG16's
// training plan keeps most of its outputs for backward (convolutions need x,
// ReLU its y, pooling both), so the savings come from in-place ReLUs, dead
// dropout and flatten outputs, and gradients, of which only a few are alive
// at once.
TEST(MemoryPlan, ReuseShrinksActivationsAndTheirGradients) {
  const MemoryPlan plan = plan_of(find_net("VGG16").build(1), Phase::kTraining);
  const double without = static_cast<double>(plan.values_without_reuse + plan.grads_without_reuse);
  const double with = static_cast<double>(plan.values.total + plan.grads.total);
  EXPECT_EQ(plan.in_place, 15) << "the 13 convolutions' and 2 hidden linear layers' ReLUs";
  const MemoryPlan inference = plan_of(find_net("VGG16").build(1), Phase::kInference);
  EXPECT_LT(with / without, 0.40) << "VGG16: " << with / 1e6 << " MB with reuse, " << without / 1e6 << " without";
  EXPECT_LT(plan.grads.total * 4, plan.grads_without_reuse) << "gradients are short-lived";
  EXPECT_LT(inference.values.total * 2, plan.values.total) << "a forward-only plan keeps nothing for backward";
  EXPECT_TRUE(inference.grad_blocks.empty());
}

// ResNet-50 keeps, per bottleneck, the three convolutions' outputs (their
// batch norms read x) and the three ReLUs' (the next convolution reads them),
// while batch-norm outputs become ReLU outputs in place and the residual
// add's output is its ReLU's: activations fall 1.8x, their gradients 15x,
// the two together (what "activation memory" means here) more than 3x.
TEST(MemoryPlan, ResNet50NeedsLessThanHalfTheActivationMemory) {
  const MemoryPlan plan = plan_of(find_net("ResNet50").build(1), Phase::kTraining);
  const double values = static_cast<double>(plan.values.total) / static_cast<double>(plan.values_without_reuse);
  const double both = static_cast<double>(plan.values.total + plan.grads.total) /
                      static_cast<double>(plan.values_without_reuse + plan.grads_without_reuse);
  EXPECT_LT(values, 0.6) << "activations alone";
  EXPECT_LT(both, 0.35) << "activations and their gradients";
  EXPECT_EQ(plan.in_place, 49) << "every ReLU: after 33 of the 53 batch norms and after the 16 residual adds";
  // Note [Gradients shared through an add]: both inputs of each of the 16 adds.
  EXPECT_EQ(plan.shared_grads, 32);
}

TEST(MemoryPlan, AValueReadByAnotherLayerIsNotOverwrittenInPlace) {
  GraphBuilder g;
  const Value x = g.input("images", {2, 6});
  const Value h = g.linear(x, {.out_features = 4}, "fc1");
  const Value r = g.relu(h, "relu");  // fc1's output is also read by the add: no in-place
  const Value sum = g.add({h, r}, "add");
  const Value r2 = g.relu(sum, "relu2");  // add's output has one reader: in place
  const Value loss = g.softmax_cross_entropy(g.linear(r2, {.out_features = 3}, "fc2"), g.input("labels", {2}, DType::kInt32));
  const Graph graph = std::move(g).build(loss);
  const MemoryPlan plan = plan_of(graph, Phase::kTraining);
  auto block = [&](std::string_view name) {
    for (size_t i = 0; i < graph.nodes().size(); ++i) {
      if (graph.nodes()[i].name == name) return plan.value_block[i];
    }
    return -2;
  };
  EXPECT_NE(block("relu"), block("fc1"));
  EXPECT_EQ(block("relu2"), block("add"));
  EXPECT_EQ(plan.in_place, 1);
}

// Note [Gradients shared through an add], case by case.
TEST(MemoryPlan, AnAddsInputsShareItsGradientWhereNothingReadsItAfterAnAddition) {
  GraphBuilder g;
  const Value x = g.input("images", {2, 6});
  const Value labels = g.input("labels", {2}, DType::kInt32);
  const Value h = g.linear(x, {.out_features = 4}, "h");
  const Value branch = g.linear(g.relu(h, "relu"), {.out_features = 4}, "branch");
  const Value residual = g.add({h, branch}, "residual");      // h: its other reader runs backward last: both share
  const Value r = g.linear(residual, {.out_features = 4}, "r");
  const Value reads_r = g.relu(r, "reads_r");
  const Value close = g.add({r, reads_r}, "close");          // r's other reader is reads_r itself: r keeps its own
  const Value twice = g.add({close, close}, "twice");        // one input given twice: dy is doubled, not shared
  const Value later = g.linear(twice, {.out_features = 4}, "later");
  const Value chain = g.add({g.add({later, twice}, "inner"), later}, "outer");
  const Value loss = g.softmax_cross_entropy(g.linear(chain, {.out_features = 3}, "fc"), labels);
  const Graph graph = std::move(g).build(loss);
  const MemoryPlan plan = plan_of(graph, Phase::kTraining);
  auto shared = [&](std::string_view name) {
    for (size_t i = 0; i < graph.nodes().size(); ++i) {
      if (graph.nodes()[i].name == name) {
        const int add = plan.grad_shared_with[i];
        return add < 0 ? std::string("-") : graph.nodes()[static_cast<size_t>(add)].name;
      }
    }
    return std::string("?");
  };
  EXPECT_EQ(shared("h"), "residual");
  EXPECT_EQ(shared("branch"), "residual");
  EXPECT_EQ(shared("r"), "-");
  EXPECT_EQ(shared("reads_r"), "close");
  EXPECT_EQ(shared("close"), "-");
  EXPECT_EQ(shared("inner"), "outer");
  EXPECT_EQ(shared("twice"), "-");  // inner's own gradient is outer's: one level only
  EXPECT_EQ(shared("later"), "-");  // inner, which reads the block, would add to it in the same call
  EXPECT_EQ(plan.shared_grads, 4);
  EXPECT_EQ(find_overlap(plan.grad_blocks, plan.grads), "");
  const MemoryPlan off = plan_activations(graph, Phase::kTraining, MemoryReuse::kOff);
  EXPECT_EQ(off.shared_grads, 0);
}

// A small network with every kind of lifetime: fan-out, a residual add,
// batch norm, dropout, pooling, concatenation.
Graph mixed_net(int batch) {
  GraphBuilder g;
  Value x = g.input("images", {batch, 3, 12, 12});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  x = g.relu(g.batch_norm(g.conv(x, {.out_channels = 8, .kernel = 3, .pad = 1, .bias = false}, "conv1")), "relu1");
  const Value branch = g.relu(g.conv(x, {.out_channels = 8, .kernel = 3, .pad = 1}, "conv2"), "relu2");
  x = g.relu(g.add({x, branch}, "add"), "relu3");
  x = g.max_pool(x, {.kernel = 2, .stride = 2});
  x = g.concat({x, g.conv(x, {.out_channels = 4, .kernel = 1}, "conv3")}, "concat");
  x = g.dropout(g.flatten(x), {.p = 0.3f});
  const Value loss = g.softmax_cross_entropy(g.linear(x, {.out_features = 5}, "fc"), labels);
  return std::move(g).build(loss);
}

struct TrainedRun {
  std::vector<float> losses, parameters, gradients;
};

TrainedRun train(MemoryReuse reuse) {
  Context ctx = Context::cpu();
  Graph graph = mixed_net(4);
  CompileOptions options;
  options.memory_reuse = reuse;
  graph.compile(ctx, options);
  fill_synthetic_batch(ctx, graph, 5);
  Sgd sgd(ctx, graph.parameters(), graph.gradients(), {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.0f});
  TrainedRun run;
  for (int step = 0; step < 3; ++step) {
    graph.zero_grad(ctx);
    graph.forward(ctx, Phase::kTraining);
    graph.backward(ctx);
    run.losses.push_back(graph.loss(ctx));
    sgd.step(ctx);
  }
  run.parameters = to_vector<float>(ctx, graph.parameters());
  run.gradients = to_vector<float>(ctx, graph.gradients());
  return run;
}

TEST(MemoryPlan, ReuseChangesNoLossParameterOrGradientBitForBit) {
  const TrainedRun with = train(MemoryReuse::kOn);
  const TrainedRun without = train(MemoryReuse::kOff);
  EXPECT_EQ(with.losses, without.losses);
  EXPECT_EQ(with.parameters, without.parameters);
  EXPECT_EQ(with.gradients, without.gradients);
  const MemoryPlan plan = plan_of(mixed_net(4), Phase::kTraining);
  EXPECT_GT(plan.in_place, 0);
  EXPECT_LT(plan.values.total + plan.grads.total, plan.values_without_reuse + plan.grads_without_reuse);
}

// Sharing an add's gradient block changes no gradient, bit for bit: a
// residual network's parameter and input gradients with reuse (shared) and
// without (every gradient its own).
// Unfused, so that every add shares (a residual add its batch norm does
// shares nothing: Note [A residual add fused into its batch norm]); fused,
// the two adds of the subsampling blocks still do.
TEST(MemoryPlan, SharedAddGradientsChangeNoGradientBitForBit) {
  std::vector<std::vector<float>> gradients, input_gradients;
  for (int run = 0; run < 3; ++run) {
    const MemoryReuse reuse = run < 2 ? MemoryReuse::kOn : MemoryReuse::kOff;
    const bool fusion = run == 1;
    Context ctx = Context::cpu();
    Graph graph = find_net("ResNet56").build(2);
    graph.compile(ctx, {.memory_reuse = reuse, .input_gradients = {"images"}, .fusion = fusion});
    EXPECT_EQ(graph.memory_plan().shared_grads, reuse == MemoryReuse::kOff ? 0 : fusion ? 4 : 54)
        << "both inputs of 27 adds, or of the 2 no batch norm does";
    fill_synthetic_batch(ctx, graph, 10);
    graph.forward(ctx, Phase::kTraining);
    graph.backward(ctx, Graph::ParamGrads::kReplace);
    gradients.push_back(to_vector<float>(ctx, graph.gradients()));
    input_gradients.push_back(to_vector<float>(ctx, graph.input_gradient("images")));
  }
  EXPECT_EQ(gradients[0], gradients[1]);
  EXPECT_EQ(gradients[0], gradients[2]);
  EXPECT_EQ(input_gradients[0], input_gradients[1]);
  EXPECT_EQ(input_gradients[0], input_gradients[2]);
}

TEST(InferencePlan, HasNoGradientsAndRefusesToTrain) {
  Context ctx = Context::cpu();
  Graph graph = mixed_net(2);
  CompileOptions options;
  options.phase = Phase::kInference;
  graph.compile(ctx, options);
  fill_synthetic_batch(ctx, graph, 5);
  EXPECT_FALSE(graph.gradients().defined());
  EXPECT_EQ(ctx.memory().current[static_cast<size_t>(MemoryCategory::kGradients)], 0);
  EXPECT_EQ(ctx.memory().current[static_cast<size_t>(MemoryCategory::kActivationGrads)], 0);
  graph.forward(ctx, Phase::kInference);
  EXPECT_TRUE(std::isfinite(graph.loss(ctx)));
  EXPECT_EQ(graph.node("conv1").grad.name(), "gradient of 'conv1' (none: compiled for inference)");
  const std::string why = "the graph was compiled for inference (forward only, in Phase::kInference); "
                          "compile it with CompileOptions::phase = Phase::kTraining to train";
  try {
    graph.backward(ctx);
    FAIL() << "backward ran on an inference plan";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "backward: " + why);
  }
  try {
    graph.forward(ctx, Phase::kTraining);
    FAIL() << "a training forward ran on an inference plan";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "a training-phase forward: " + why);
  }
}

TEST(InferencePlan, ComputesWhatTheTrainingPlanComputesInInference) {
  std::vector<float> losses;
  for (Phase compiled_for : {Phase::kTraining, Phase::kInference}) {
    Context ctx = Context::cpu();
    Graph graph = mixed_net(3);
    CompileOptions options;
    options.phase = compiled_for;
    graph.compile(ctx, options);
    fill_synthetic_batch(ctx, graph, 5);
    graph.forward(ctx, Phase::kInference);
    losses.push_back(graph.loss(ctx));
  }
  EXPECT_EQ(losses[0], losses[1]);
}

TEST(InferencePlan, ALayerPreparedForInferenceRefusesTrainingAndBackward) {
  Context ctx = Context::cpu();
  Linear fc("fc", {.out_features = 3});
  const Shape input{2, 4};
  fc.bind(std::span<const Shape>(&input, 1));
  fc.prepare(ctx, {.phase = Phase::kInference});
  const Tensor x = ctx.allocate(input, DType::kFloat32, MemoryCategory::kData);
  const Tensor y = ctx.allocate(Shape{2, 3}, DType::kFloat32, MemoryCategory::kActivations);
  const std::vector<Tensor> params = {ctx.allocate(Shape{3, 4}, DType::kFloat32, MemoryCategory::kParameters),
                                      ctx.allocate(Shape{3}, DType::kFloat32, MemoryCategory::kParameters)};
  const std::vector<Tensor> inputs = {x};
  try {
    fc.forward(ctx, {.inputs = inputs, .output = y, .params = params, .phase = Phase::kTraining});
    FAIL() << "a training forward ran";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "fc (Linear): a training-phase forward, but the layer was prepared for inference only");
  }
  const std::vector<Tensor> grads = {Tensor()};
  const std::vector<GradMode> modes = {GradMode::kWrite};
  try {
    fc.backward(ctx, {.inputs = inputs, .output = y, .output_grad = y, .input_grads = grads,
                      .input_grad_modes = modes, .params = params, .param_grads = params});
    FAIL() << "backward ran";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "fc (Linear): backward, but the layer was prepared for inference only");
  }
}

TEST(MemoryPlan, ALayerWhoseStateDoesNotFitIsNamed) {
  Context ctx = Context::cpu();
  ctx.allocator().set_limit(1024);
  Dropout drop("drop6", {.p = 0.5f});
  const Shape input{64, 4096};
  drop.bind(std::span<const Shape>(&input, 1));
  try {
    drop.prepare(ctx);
    FAIL() << "a 1 MiB mask fitted in 1 KiB";
  } catch (const OutOfMemoryError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("drop6 (Dropout): cpu: out of memory allocating 1.00 MiB of layer state", 0), 0u) << message;
  }
}

TEST(MemoryPlan, IsReadableOnlyAfterCompile) {
  const Graph graph = mixed_net(2);
  try {
    graph.memory_plan();
    FAIL() << "a plan before compile";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "memory_plan: the graph is not compiled; call compile(ctx) first");
  }
}

}  // namespace
}  // namespace glassbox
