// examples/train_mlp/main.cpp: Glassbox used as a library by a program of its
// own. Builds a small multilayer perceptron, compiles it for the CPU, trains it
// with SGD on one seeded synthetic batch, and prints the loss as it falls.
// Exits 1 if it does not fall: CI builds and runs this against the installed
// package (tests/install/install_test.cmake).
//
// The task: 64 points in 16 dimensions, drawn from U(-1, 1); a point's class
// is whichever of its first 4 coordinates is largest. One batch, seen every
// step, so the loss must go down quickly.
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "graph/builder.h"  // GraphBuilder, and the graph and layers it builds
#include "optim/sgd.h"
#include "tensor/copy.h"    // from_vector: host values into a tensor

namespace {

constexpr int kBatch = 64, kFeatures = 16, kClasses = 4, kSteps = 30;

}  // namespace

int main() {
  using namespace glassbox;

  // 1. The network, as a graph: named inputs, layers (named here so that the
  //    parameters get readable names), and the loss that ends every graph.
  GraphBuilder g;
  const Value features = g.input("features", {kBatch, kFeatures});
  const Value labels = g.input("labels", {kBatch}, DType::kInt32);
  Value h = g.relu(g.linear(features, {.out_features = 32}, "fc1"));
  h = g.dropout(h, {.p = 0.1f}, "drop1");
  const Value logits = g.linear(h, {.out_features = kClasses}, "fc2");
  Graph net = std::move(g).build(g.softmax_cross_entropy(logits, labels));

  // 2. Compile for a device: parameters (one flat buffer, seeded), the memory
  //    plan, each layer's set-up. Nothing is allocated after this.
  Context ctx = Context::cpu();
  net.compile(ctx, {.seed = 7});
  std::printf("parameters:");
  for (const NamedTensor& p : net.named_parameters()) std::printf(" %s %s", p.name.c_str(), p.tensor.shape().str().c_str());
  std::printf(" (%lld in all)\n", static_cast<long long>(net.parameter_count()));

  // 3. The data, written into the graph's input tensors.
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(kBatch * kFeatures);
  std::vector<int> y(kBatch);
  for (int n = 0; n < kBatch; ++n) {
    float* point = &x[static_cast<size_t>(n) * kFeatures];
    for (int f = 0; f < kFeatures; ++f) point[f] = uniform(rng);
    y[static_cast<size_t>(n)] = static_cast<int>(std::max_element(point, point + kClasses) - point);
  }
  from_vector<float>(ctx, x, net.input("features"));
  from_vector<int>(ctx, y, net.input("labels"));

  // 4. Train: each step runs forward (training phase: dropout on) and
  //    backward, whose parameter gradients replace the last step's (no
  //    zero_grad needed), then lets the optimizer update the parameters.
  Sgd sgd(ctx, net.parameters(), net.gradients(), {.lr = 0.2f, .momentum = 0.9f, .weight_decay = 0.0f});
  auto loss_without_dropout = [&] {
    net.forward(ctx, Phase::kInference);
    return net.loss(ctx);
  };
  const float first = loss_without_dropout();
  std::printf("step  0: loss %.4f\n", first);
  for (int step = 1; step <= kSteps; ++step) {
    net.forward(ctx, Phase::kTraining);
    net.backward(ctx, Graph::ParamGrads::kReplace);
    sgd.step(ctx);
    if (step % 10 == 0) std::printf("step %2d: loss %.4f\n", step, loss_without_dropout());
  }

  // 5. The loss must have fallen well below where it started.
  const float last = loss_without_dropout();
  if (!(last < 0.5f * first)) {
    std::printf("FAILED: the loss went from %.4f to %.4f\n", first, last);
    return 1;
  }
  std::printf("the loss fell from %.4f to %.4f\n", first, last);
  return 0;
}
