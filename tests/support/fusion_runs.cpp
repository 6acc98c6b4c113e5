// tests/support/fusion_runs.cpp
#include "tests/support/fusion_runs.h"

#include <gtest/gtest.h>

#include "data/synthetic.h"
#include "optim/sgd.h"
#include "tensor/copy.h"
#include "tests/support/checks.h"

namespace glassbox::testing {

std::string fused_relus(const Graph& graph) {
  std::string fused;
  for (const Node& node : graph.nodes()) {
    if (node.fused_into < 0) {
      EXPECT_EQ(node.backward_fused_into, -1) << node.name;
      continue;
    }
    const Node& producer = graph.nodes()[static_cast<size_t>(node.fused_into)];
    const bool backward = node.backward_fused_into >= 0;
    if (backward) {
      EXPECT_EQ(node.backward_fused_into, node.fused_into) << node.name;
    }
    EXPECT_TRUE(producer.layer->fused_relu()) << node.name;
    EXPECT_EQ(producer.layer->fused_relu_backward(), backward) << node.name;
    // A residual add's producer is the batch norm that does it (Note [A
    // residual add fused into its batch norm]), and so is its ReLU's.
    const bool through_add = node.inputs.size() == 1 && node.inputs[0] != node.fused_into;
    EXPECT_EQ(producer.layer->fused_residual(), producer.residual >= 0) << node.name;
    if (node.layer->type() == "Add" || through_add) {
      EXPECT_GE(producer.residual, 0) << node.name;
    }
    fused += cat(fused.empty() ? "" : " ", node.name, "<-", producer.name, backward ? "+backward" : "");
  }
  return fused;
}

int node_index(const Graph& graph, const std::string& name) {
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    if (graph.nodes()[i].name == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no node " << name;
  return 0;
}

FusionRun train_three_steps(Context& ctx, Graph graph, const CompileOptions& options, int classes,
                            const std::string& watched) {
  graph.compile(ctx, options);
  fill_synthetic_batch(ctx, graph, classes);
  // The working copy too, in a bf16 or fp16 graph: the update rewrites the
  // 16-bit weights the layers read, so that each step runs on the last's.
  Sgd sgd(ctx, graph.parameters(), graph.gradients(), {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.0f},
          graph.working_parameters());
  FusionRun r;
  for (int step = 0; step < 3; ++step) {
    graph.forward(ctx, Phase::kTraining);
    graph.backward(ctx, Graph::ParamGrads::kReplace);
    r.losses.push_back(graph.loss(ctx));
    if (step == 0) r.gradients = to_vector<float>(ctx, graph.gradients());
    sgd.step(ctx);
  }
  r.parameters = to_vector<float>(ctx, graph.parameters());
  graph.forward(ctx, Phase::kInference);
  r.inference = to_float_vector(ctx, graph.node(watched).value);
  return r;
}

void expect_same_run(const FusionRun& fused, const FusionRun& unfused, double tolerance, const std::string& what) {
  expect_close(fused.losses, unfused.losses, tolerance, what + "losses");
  expect_close(fused.gradients, unfused.gradients, tolerance, what + "first step's gradients");
  expect_close(fused.parameters, unfused.parameters, tolerance, what + "parameters after three steps");
  expect_close(fused.inference, unfused.inference, tolerance, what + "the watched value after an inference forward");
}

}  // namespace glassbox::testing
