// tests/test_determinism.cpp: the CPU path is bit-reproducible. The same
// seeds and the same thread count must give the same parameters, bit for bit,
// after several SGD steps, however the threads happen to be scheduled (see
// Note [Reproducible weight gradients] in layers/conv2d.cpp). Across thread
// counts the results are close, not identical: README.md says why.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <vector>

#include "data/synthetic.h"
#include "graph/builder.h"
#include "optim/sgd.h"
#include "tensor/copy.h"

namespace glassbox {
namespace {

// Sets the OpenMP thread count for a scope (layers size their work at
// compile time from omp_get_max_threads()), restoring it afterwards.
class ThreadCount {
 public:
  explicit ThreadCount(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~ThreadCount() { omp_set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

constexpr int kThreads = 4;  // more than CI's 2 cores: threads are also preempted mid-pass
constexpr int kBatch = 16;
constexpr int kSteps = 10;
constexpr int kClasses = 10;

// Convolutions, max pooling, batch norm, ReLU, dropout, a linear layer and the
// loss. At kThreads threads and kBatch images, conv1's backward-filter has two
// 512-pixel tiles per image, so 32 items, 8 per slot; conv2's has 16, 4 per
// slot. With the old dynamic schedule this failed in each of 150 processes on
// a shared 2-core machine (27 of 30 with half the channels and images, 8 steps).
// Global average pooling keeps the linear layer's products small enough that
// Eigen runs them on one thread: its own threads busy-wait for each other,
// which costs seconds when threads outnumber cores.
Graph small_net() {
  GraphBuilder g;
  Value x = g.input("images", {kBatch, 3, 32, 32});
  const Value labels = g.input("labels", {kBatch}, DType::kInt32);
  x = g.relu(g.batch_norm(g.conv(x, {.out_channels = 32, .kernel = 3, .pad = 1}, "conv1")));
  x = g.max_pool(x, {.kernel = 2, .stride = 2});  // 32 -> 16
  x = g.relu(g.batch_norm(g.conv(x, {.out_channels = 64, .kernel = 3, .pad = 1}, "conv2")));
  x = g.max_pool(x, {.kernel = 2, .stride = 2});  // 16 -> 8
  x = g.flatten(g.global_avg_pool(g.dropout(x, {.p = 0.5f})));
  const Value logits = g.linear(x, {.out_features = kClasses}, "fc");
  return std::move(g).build(g.softmax_cross_entropy(logits, labels));
}

struct TrainingRun {
  std::vector<float> parameters;  // the flat buffer after the last step
  std::vector<float> losses;      // each step's training loss
};

// A fresh context and graph from fixed seeds, then kSteps SGD steps.
TrainingRun train(int threads) {
  const ThreadCount scope(threads);
  Context ctx = Context::cpu(/*seed=*/11);  // dropout masks
  Graph graph = small_net();
  graph.compile(ctx, {.seed = 5});
  fill_synthetic_batch(ctx, graph, kClasses, /*seed=*/7);
  Sgd sgd(ctx, graph.parameters(), graph.gradients(), {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f});
  TrainingRun run;
  for (int step = 0; step < kSteps; ++step) {
    graph.zero_grad(ctx);
    graph.forward(ctx, Phase::kTraining);
    graph.backward(ctx);
    sgd.step(ctx);
    run.losses.push_back(graph.loss(ctx));
  }
  run.parameters = to_vector<float>(ctx, graph.parameters());
  return run;
}

// How many floats differ in their bits, for the failure message.
size_t bitwise_differences(const std::vector<float>& a, const std::vector<float>& b) {
  size_t count = 0;
  for (size_t i = 0; i < a.size(); ++i) count += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return count;
}

TEST(Determinism, SameSeedsAndThreadCountGiveIdenticalBits) {
  const TrainingRun first = train(kThreads);
  const TrainingRun second = train(kThreads);
  ASSERT_EQ(first.parameters.size(), second.parameters.size());
  ASSERT_EQ(first.losses.size(), second.losses.size());
  EXPECT_NE(first.losses.front(), first.losses.back()) << "the steps did not train";
  EXPECT_EQ(bitwise_differences(first.losses, second.losses), 0u) << "training losses differ between runs";
  EXPECT_EQ(bitwise_differences(first.parameters, second.parameters), 0u)
      << "parameters (of " << first.parameters.size() << ") differ after " << kSteps << " steps";
}

}  // namespace
}  // namespace glassbox
