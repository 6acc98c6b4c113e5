// tests/support/checks.h: layer checks every layer test runs.
//
// check_gradients: central finite differences on the CPU against backward, for
// every float input and every parameter (all elements, or a seeded sample of
// large tensors). Also checks the gradient contract: input gradients written
// with kWrite, added with kAdd, parameter gradients accumulated (+=).
//
// check_cpu_cuda_parity: the same layer on both backends from the same inputs
// and parameters, with outputs and written gradients pre-filled with NaN (so an
// element left unwritten fails) and TF32 off.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/harness.h"

namespace glassbox::testing {

struct GradCheckOptions {
  uint64_t seed = 1;
  double epsilon = 1e-2;         // step of the central difference, on inputs in U(-1, 1)
  double abs_tolerance = 2e-3;   // |analytic - numeric| <= abs + rel * |numeric|
  double rel_tolerance = 2e-2;
  int max_elements = 48;         // elements checked per tensor (a seeded sample beyond this)
  Phase phase = Phase::kTraining;
  // Sets inputs the random fill cannot (labels), after randomize().
  std::function<void(LayerHarness&)> fill;
};

// Runs on a CPU context; records failures with EXPECT_*.
void check_gradients(std::function<std::unique_ptr<Layer>()> make_layer,
                     std::vector<Shape> input_shapes, const GradCheckOptions& options = {});

struct ParityOptions {
  uint64_t seed = 7;
  double tolerance = 1e-4;  // |cuda - cpu| <= tolerance * (1 + max |cpu|) per tensor
  Phase phase = Phase::kTraining;
  std::function<void(LayerHarness&)> fill;
};

// Skips (visibly) without a usable GPU; records failures with EXPECT_*.
void check_cpu_cuda_parity(std::function<std::unique_ptr<Layer>()> make_layer,
                           std::vector<Shape> input_shapes, const ParityOptions& options = {});

// The largest |expected - actual| over the largest |expected|: the error of
// `actual` as a fraction of `expected`'s scale (the difference itself where
// `expected` is all zeros). Records a failure where the sizes differ.
double relative_error(const std::vector<float>& expected, const std::vector<float>& actual);

// Compares element by element; on failure names `what`, the worst index and both values.
void expect_close(const std::vector<float>& actual, const std::vector<float>& expected,
                  double tolerance, const std::string& what);

}  // namespace glassbox::testing
