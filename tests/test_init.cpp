// tests/test_init.cpp: parameter initialisation rules (graph/init.h) on their own.
// Graph.InitialisationIsSeededAndReproducible (tests/test_graph.cpp) covers the
// seeding through a compiled graph; here each rule's range.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "graph/init.h"

namespace glassbox {
namespace {

std::vector<float> fill(const ParamSpec& spec, uint64_t seed, int index) {
  std::vector<float> values(static_cast<size_t>(spec.shape.numel()));
  fill_initial_values(spec, seed, index, values);
  return values;
}

TEST(Init, UniformStaysInsideItsBoundAndFillsIt) {
  const ParamSpec spec{.name = "weight", .shape = Shape{100, 50}, .init = Init::kUniform, .bound = 0.1f};
  const std::vector<float> values = fill(spec, 3, 0);
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  EXPECT_GE(*lo, -0.1f);
  EXPECT_LE(*hi, 0.1f);
  // 5000 draws: the extremes come within 1% of the bound, and the mean is near
  // 0 (its standard deviation is 0.1 / sqrt(3 * 5000) = 8e-4).
  EXPECT_LT(*lo, -0.099f);
  EXPECT_GT(*hi, 0.099f);
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  EXPECT_NEAR(mean, 0.0, 4e-3);
  // The bound is the range, whatever the fan-in.
  ParamSpec wide = spec;
  wide.fan_in = 10000;
  wide.bound = 2.5f;
  const std::vector<float> wide_values = fill(wide, 3, 0);
  EXPECT_GT(*std::max_element(wide_values.begin(), wide_values.end()), 2.4f);
}

TEST(Init, UniformIsSeededPerParameter) {
  const ParamSpec spec{.name = "weight", .shape = Shape{64}, .init = Init::kUniform, .bound = 0.1f};
  EXPECT_EQ(fill(spec, 3, 1), fill(spec, 3, 1));
  EXPECT_NE(fill(spec, 3, 1), fill(spec, 4, 1));
  EXPECT_NE(fill(spec, 3, 1), fill(spec, 3, 2));
}

TEST(Init, UniformRefusesABoundThatIsNotPositiveAndFinite) {
  for (const float bound : {0.0f, -0.1f, NAN, INFINITY}) {
    const ParamSpec spec{.name = "encoder.weight", .shape = Shape{4}, .init = Init::kUniform, .bound = bound};
    try {
      fill(spec, 1, 0);
      ADD_FAILURE() << "accepted bound " << bound;
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()),
                cat("parameter 'encoder.weight': Init::kUniform needs a positive, finite bound, got ", bound));
    }
  }
}

TEST(Init, FanInUniformScalesWithTheFanIn) {
  const ParamSpec spec{.name = "weight", .shape = Shape{1000}, .init = Init::kFanInUniform, .fan_in = 25};
  const std::vector<float> values = fill(spec, 1, 0);
  for (float v : values) EXPECT_LE(std::fabs(v), 0.2f);
  EXPECT_GT(*std::max_element(values.begin(), values.end()), 0.19f);
}

}  // namespace
}  // namespace glassbox
