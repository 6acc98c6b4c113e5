// tests/support/network_checks.cpp
#include "tests/support/network_checks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "optim/train_step.h"
#include "tensor/copy.h"

namespace glassbox::testing {

void expect_gradient_matches_directional_differences(Context& ctx, Graph& graph, Phase phase,
                                                     const std::array<double, 3>& steps, const std::string& what,
                                                     double tolerance) {
  graph.zero_grad(ctx);
  graph.forward(ctx, phase);
  graph.backward(ctx);
  const std::vector<float> grad = to_vector<float>(ctx, graph.gradients());
  const std::vector<float> w = to_vector<float>(ctx, graph.parameters());
  double norm = 0.0;
  for (float g : grad) norm += static_cast<double>(g) * g;
  norm = std::sqrt(norm);
  ASSERT_GT(norm, 0.0) << what << ": the gradient is zero";
  // The differences below move the weights along the computed gradient, so they cannot see a parameter
  // whose gradient was never written (zero): that part of the true gradient is simply not probed.
  std::string unwritten;
  for (const NamedTensor& view : graph.named_views(graph.gradients())) {
    const std::vector<float> part = to_vector<float>(ctx, view.tensor);
    if (std::all_of(part.begin(), part.end(), [](float g) { return g == 0.0f; })) unwritten += " " + view.name;
  }
  EXPECT_TRUE(unwritten.empty()) << what << ": parameters whose gradient is all zero:" << unwritten;

  auto loss_at = [&](double step) {
    std::vector<float> moved(w.size());
    for (size_t i = 0; i < w.size(); ++i) moved[i] = w[i] + static_cast<float>(step * grad[i] / norm);
    from_vector<float>(ctx, moved, graph.parameters());
    graph.forward(ctx, phase);
    return static_cast<double>(graph.loss(ctx));
  };
  std::array<double, 3> errors{};
  for (size_t i = 0; i < steps.size(); ++i) {
    const double numeric = (loss_at(steps[i]) - loss_at(-steps[i])) / (2 * steps[i]);
    errors[i] = std::fabs(numeric - norm) / norm;
  }
  from_vector<float>(ctx, w, graph.parameters());  // leave the network as it was
  EXPECT_LT(errors[2], errors[0]) << what << ": the difference does not converge to the gradient";
  EXPECT_LT(errors[2], tolerance) << what << ": |dL/dw| = " << norm << ", relative errors " << errors[0] << ", "
                              << errors[1] << ", " << errors[2];
}

void expect_sgd_steps_lower_the_loss(Context& ctx, Graph& graph, const SgdOptions& options, Phase read_phase,
                                     float factor, const std::string& what) {
  Sgd sgd(ctx, graph.parameters(), graph.gradients(), options);
  auto loss = [&] {
    graph.forward(ctx, read_phase);
    return graph.loss(ctx);
  };
  const float before = loss();
  for (int step = 0; step < 4; ++step) train_step(ctx, graph, sgd);
  const float after = loss();
  EXPECT_TRUE(std::isfinite(before) && std::isfinite(after)) << what << ": loss " << before << " -> " << after;
  EXPECT_LT(after, before * factor) << what << ": loss " << before << " -> " << after;
}

}  // namespace glassbox::testing
