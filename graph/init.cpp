// graph/init.cpp
#include "graph/init.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace glassbox {

void fill_initial_values(const ParamSpec& spec, uint64_t seed, int index, std::span<float> values) {
  // One generator per parameter, so adding a layer does not shift the others' values.
  std::seed_seq sequence{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                         static_cast<uint32_t>(index)};
  std::mt19937_64 rng(sequence);
  const double fan_in = static_cast<double>(std::max<int64_t>(spec.fan_in, 1));
  switch (spec.init) {
    case Init::kHeNormal: {
      std::normal_distribution<float> normal(0.0f, static_cast<float>(std::sqrt(2.0 / fan_in)));
      for (float& v : values) v = normal(rng);
      break;
    }
    case Init::kFanInUniform: {
      const auto bound = static_cast<float>(1.0 / std::sqrt(fan_in));
      std::uniform_real_distribution<float> uniform(-bound, bound);
      for (float& v : values) v = uniform(rng);
      break;
    }
    case Init::kUniform: {
      // A layer's constant, so a bad one is the layer's bug, caught before it
      // fills a network with zeros (bound 0) or NaN.
      if (!(spec.bound > 0.0f) || !std::isfinite(spec.bound)) {
        throw ConfigError(cat("parameter '", spec.name, "': Init::kUniform needs a positive, finite bound, got ",
                              spec.bound));
      }
      std::uniform_real_distribution<float> uniform(-spec.bound, spec.bound);
      for (float& v : values) v = uniform(rng);
      break;
    }
    case Init::kZeros:
      std::fill(values.begin(), values.end(), 0.0f);
      break;
    case Init::kOnes:
      std::fill(values.begin(), values.end(), 1.0f);
      break;
  }
}

}  // namespace glassbox
