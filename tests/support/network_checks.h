// tests/support/network_checks.h: the whole-network checks that every network
// family's tests run (on a reduced variant where the full network would be
// slow): the gradient against the loss, and training on a fixed batch.
//
// The gradient check: along the unit gradient direction d = g / |g|, the central difference
// (L(w + eps d) - L(w - eps d)) / (2 eps) must approach |g| as eps shrinks.
// ReLU kinks and max pools make the convergence first order, so the check asks
// for an error that shrinks over the three steps and ends within a tolerance
// (2.5% unless a test says why it needs more). A direction along g cannot see a
// gradient that was never written (the true gradient's part there is not probed),
// so the check also asks that no parameter's gradient be all zero.
#pragma once

#include <array>
#include <string>

#include "graph/graph.h"
#include "optim/sgd.h"
#include "tensor/context.h"

namespace glassbox::testing {

// `graph` is compiled for training on a CPU context, its batch filled. Every
// forward runs in `phase`, which must make the loss a fixed function of w
// (kInference turns dropout off; batch norm's training phase reads batch
// statistics only). `steps`: eps, largest first. Records failures with
// EXPECT_*, naming `what`; leaves the parameters as they were.
void expect_gradient_matches_directional_differences(Context& ctx, Graph& graph, Phase phase,
                                                     const std::array<double, 3>& steps, const std::string& what,
                                                     double tolerance = 0.025);

// Four SGD steps (training-phase forward, backward, update) on the graph's
// fixed batch must lower the loss to below `factor` times where it started,
// both read from a forward in `read_phase` and finite. `graph` is compiled on
// `ctx`, its batch filled. Records failures with EXPECT_*, naming `what`.
void expect_sgd_steps_lower_the_loss(Context& ctx, Graph& graph, const SgdOptions& options, Phase read_phase,
                                     float factor, const std::string& what);

}  // namespace glassbox::testing
