// tests/test_random_graphs.cpp: the graph compiler's rewrites on random
// graphs. Fusion (graph/fusion.h) and the memory plan's sharing (in-place
// ReLUs, Note [Gradients shared through an add], graph/memory_plan.h) must not
// change what a graph computes: on the CPU in fp32 a graph compiled with them
// trains to the bit as the same graph compiled with neither, and no plan
// gives two live values (or gradients) the same bytes.
//
// The graphs are small convolutional ones of the shapes users build:
// convolutions, batch norms, ReLUs, adds of two or three values, pooling,
// dropout and concatenations, each reading mostly recent values, so values
// with several readers, adds of a value and its own descendant, and layers
// between a batch norm and its ReLU all occur. Seeds are fixed: a failure
// names its seed and prints the graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/memory_plan.h"
#include "tests/support/fusion_runs.h"

namespace glassbox {
namespace {

constexpr uint64_t kGraphs = 300;

// A random graph from `seed`, and what it is in words ("n0 = conv(images); ...").
struct RandomGraph {
  Graph graph;
  std::string text;
};

RandomGraph random_graph(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  GraphBuilder g;
  const Value images = g.input("images", {2, 4, 5, 5});
  const Value labels = g.input("labels", {2}, DType::kInt32);
  std::vector<Value> values{images};
  std::vector<std::string> names{"images"};
  std::vector<int> readers{0};
  // Mostly one of the three latest values, sometimes any.
  auto choose = [&] {
    const int n = static_cast<int>(values.size());
    const int k = pick(3) == 0 ? pick(n) : n - 1 - pick(std::min(n, 3));
    ++readers[static_cast<size_t>(k)];
    return static_cast<size_t>(k);
  };
  std::string text;
  const int layers = 6 + pick(15);
  for (int op = 0; op < layers; ++op) {
    const std::string name = cat("n", op);
    const int kind = pick(16);
    Value v;
    if (kind < 2) {
      const size_t a = choose();
      v = g.conv(values[a], {.out_channels = 4, .kernel = 3, .pad = 1, .bias = pick(2) == 0}, name);
      text += cat(name, " = conv(", names[a], "); ");
    } else if (kind < 6) {
      const size_t a = choose();
      v = g.batch_norm(values[a], {}, name);
      text += cat(name, " = bn(", names[a], "); ");
    } else if (kind < 9) {
      const size_t a = choose();
      v = g.relu(values[a], name);
      text += cat(name, " = relu(", names[a], "); ");
    } else if (kind < 13) {
      std::vector<Value> terms;
      text += cat(name, " = add(");
      for (int t = 0, count = pick(4) == 0 ? 3 : 2; t < count; ++t) {
        const size_t a = choose();
        terms.push_back(values[a]);
        text += cat(t > 0 ? ", " : "", names[a]);
      }
      text += "); ";
      v = g.add(terms, name);
    } else if (kind < 15) {
      const size_t a = choose();
      const int which = pick(3);
      if (which == 0) v = g.max_pool(values[a], {.kernel = 3, .stride = 1, .pad = 1}, name);
      if (which == 1) v = g.avg_pool(values[a], {.kernel = 3, .stride = 1, .pad = 1}, name);
      if (which == 2) v = g.dropout(values[a], {.p = 0.3f}, name);
      text += cat(name, " = ", which == 0 ? "maxpool" : which == 1 ? "avgpool" : "dropout", "(", names[a], "); ");
    } else {
      const size_t a = choose(), b = choose();
      v = g.conv(g.concat({values[a], values[b]}, name + "_cat"), {.out_channels = 4, .kernel = 1, .bias = false},
                 name);
      text += cat(name, " = conv1x1(concat(", names[a], ", ", names[b], ")); ");
    }
    values.push_back(v);
    names.push_back(name);
    readers.push_back(0);
  }
  // The head reads every value nothing else reads.
  std::vector<Value> ends;
  text += "head(";
  for (size_t k = 0; k < values.size(); ++k) {
    if (readers[k] == 0) ends.push_back(values[k]), text += names[k] + " ";
  }
  text += ")";
  const Value joined = ends.size() == 1 ? ends[0] : g.concat(ends, "ends");
  const Value logits = g.linear(g.flatten(g.global_avg_pool(joined, "pool"), "flatten"), {.out_features = 5}, "out");
  return {std::move(g).build(g.softmax_cross_entropy(logits, labels)), text};
}

// Three SGD steps in a context of its own, so that dropout draws the same
// masks in every run of the same graph.
testing::FusionRun train(uint64_t seed, const CompileOptions& options) {
  Context ctx = Context::cpu();
  return testing::train_three_steps(ctx, random_graph(seed).graph, options, 5, "out");
}

TEST(RandomGraphs, NoPlanGivesTwoLiveValuesTheSameBytes) {
  Context ctx = Context::cpu();
  for (uint64_t seed = 1; seed <= kGraphs; ++seed) {
    for (Phase phase : {Phase::kTraining, Phase::kInference}) {
      for (bool fusion : {true, false}) {
        RandomGraph g = random_graph(seed);
        g.graph.compile(ctx, {.phase = phase,
                              .layout = seed % 2 == 0 ? LayoutChoice::kNhwc : LayoutChoice::kNchw,
                              .fusion = fusion});
        const MemoryPlan& plan = g.graph.memory_plan();
        const std::string what = cat("seed ", seed, phase == Phase::kTraining ? " training" : " inference",
                                     fusion ? " fused" : " unfused", ": ", g.text);
        EXPECT_EQ(find_overlap(plan.value_blocks, plan.values), "") << what;
        EXPECT_EQ(find_overlap(plan.grad_blocks, plan.grads), "") << what;
      }
    }
  }
}

TEST(RandomGraphs, FusionAndSharedMemoryChangeNoBit) {
  int fused_graphs = 0, sharing_graphs = 0;
  for (uint64_t seed = 1; seed <= kGraphs; ++seed) {
    const LayoutChoice layout = seed % 2 == 0 ? LayoutChoice::kNhwc : LayoutChoice::kNchw;
    const std::string what =
        cat("seed ", seed, " ", seed % 2 == 0 ? "NHWC" : "NCHW", ": ", random_graph(seed).text, ": ");
    const testing::FusionRun fused = train(seed, {.layout = layout});
    const testing::FusionRun plain = train(seed, {.memory_reuse = MemoryReuse::kOff, .layout = layout,
                                                  .fusion = false});
    testing::expect_same_run(fused, plain, 0.0, what);
    if (HasFailure()) return;  // one graph's failures say it all
    Context ctx = Context::cpu();
    Graph graph = random_graph(seed).graph;
    graph.compile(ctx, {.layout = layout});
    if (!testing::fused_relus(graph).empty()) ++fused_graphs;
    const std::vector<int>& shared = graph.memory_plan().grad_shared_with;
    if (std::any_of(shared.begin(), shared.end(), [](int a) { return a >= 0; })) ++sharing_graphs;
  }
  // The rewrites under test happen in many of the graphs.
  EXPECT_GT(fused_graphs, static_cast<int>(kGraphs) / 4);
  EXPECT_GT(sharing_graphs, static_cast<int>(kGraphs) / 4);
}

// In bf16 and fp16 a fused layer rounds once where the unfused ones round
// twice (Note [Mixed precision], graph/mixed_precision.h): the runs agree
// within 3e-2 of the values' scale, as the hand-made fusion tests allow. A
// lost or doubled gradient is far outside that.
TEST(RandomGraphs, FusionAndSharedMemoryIn16BitsAgreeWithinRounding) {
  for (Precision precision : {Precision::kBf16, Precision::kFp16}) {
    for (uint64_t seed = 1; seed <= kGraphs / 3; ++seed) {
      const CompileOptions fused{.precision = precision, .layout = LayoutChoice::kNhwc};
      CompileOptions plain = fused;
      plain.memory_reuse = MemoryReuse::kOff, plain.fusion = false;
      testing::expect_same_run(train(seed, fused), train(seed, plain), 3e-2,
                               cat("seed ", seed, " ", flag_name_of(precision), ": ", random_graph(seed).text, ": "));
      if (HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace glassbox
