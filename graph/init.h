// graph/init.h: seeded, reproducible parameter initialisation.
//
// Values are drawn on the host, parameter by parameter, each from its own
// generator seeded with (seed, parameter index), straight into a CPU
// parameter or into a host buffer copied to the device:
// the same seed gives the same initial network on every device and in every
// build, which is what lets CPU and GPU training runs be compared step by step.
#pragma once

#include <cstdint>
#include <span>

#include "layers/layer.h"

namespace glassbox {

// Values for one parameter. Rules (layers/layer.h, Init):
//   kHeNormal      N(0, 2 / fan_in)                     convolution weights
//   kFanInUniform  U(-1/sqrt(fan_in), 1/sqrt(fan_in))   linear weights and biases
//   kUniform       U(-spec.bound, spec.bound)           embeddings (a fixed range, not from a fan-in)
//   kZeros, kOnes                                       biases, batch-norm shift and scale
// Throws ConfigError naming the parameter for kUniform with a bound that is
// not positive and finite.
// `out` holds spec.shape.numel() floats.
void fill_initial_values(const ParamSpec& spec, uint64_t seed, int index, std::span<float> out);

}  // namespace glassbox
