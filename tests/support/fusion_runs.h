// tests/support/fusion_runs.h: a graph trained with its ReLUs fused into their
// producers against the same graph unfused (Note [A ReLU fused into its
// producer], graph/fusion.h).
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace glassbox::testing {

// "relu1<-bn1+backward relu2<-add2": each ReLU whose producer applies it (and
// each residual add a batch norm does), that layer, and "+backward" where it
// runs the backward too. Checks that nodes and layers agree on it as it goes.
std::string fused_relus(const Graph& graph);

// The index of the node named `name` in graph.nodes(); a test failure and 0
// where there is none.
int node_index(const Graph& graph, const std::string& name);

// What three SGD steps (lr 0.05, momentum 0.9) on a synthetic batch of
// `classes` produce, then an inference forward: the losses, the first step's
// parameter gradients, the parameters at the end, and the value of the node
// `watched` after the inference forward.
struct FusionRun {
  std::vector<float> losses, gradients, parameters, inference;
};
FusionRun train_three_steps(Context& ctx, Graph graph, const CompileOptions& options, int classes,
                            const std::string& watched);

// The fused run and the unfused one agree within `tolerance` (0: to the bit);
// `what` names the case in every failure.
void expect_same_run(const FusionRun& fused, const FusionRun& unfused, double tolerance, const std::string& what);

}  // namespace glassbox::testing
