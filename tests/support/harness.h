// tests/support/harness.h: one layer with all its tensors on one device, for
// unit tests: bind + prepare the layer, allocate inputs, output, parameters and
// gradients, fill them from a seed, run forward and backward.
#pragma once

#include <cstdint>
#include <vector>

#include "layers/layer.h"
#include "tensor/context.h"

namespace glassbox::testing {

// Values from U(lo, hi) with a fixed seed: the same on every machine.
std::vector<float> random_values(int64_t count, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

class LayerHarness {
 public:
  // Binds the layer to `input_shapes`, prepares it on ctx, allocates tensors.
  LayerHarness(Context& ctx, Layer& layer, std::vector<Shape> input_shapes);

  // Fills float inputs and parameters from U(-1, 1) and the output gradient
  // from U(-1, 1), each from its own seed derived from `seed`. Integer inputs
  // (labels) are left for the test to set.
  void randomize(uint64_t seed);

  void forward(Phase phase = Phase::kTraining);
  // Input gradients with the given modes (default: write all); parameter
  // gradients accumulate onto whatever they hold, or with param_mode kWrite
  // are written (a layer that writes_param_grads()).
  void backward(std::vector<GradMode> modes = {}, GradMode param_mode = GradMode::kAdd);
  void zero_param_grads();

  // Copies inputs (any dtype), parameters and the output gradient from another
  // harness of the same layer, possibly on another device.
  void copy_values_from(const LayerHarness& other);
  // Sets every element of `t` to NaN: an element the layer fails to write stays NaN.
  void poison(const Tensor& t) const;

  // Host copies, for comparisons.
  std::vector<float> read(const Tensor& t) const;
  void write(const Tensor& t, const std::vector<float>& values) const;

  Context& ctx;
  Layer& layer;
  std::vector<Tensor> inputs;
  std::vector<Tensor> params;
  std::vector<Tensor> input_grads;  // one per float input; undefined for int inputs
  std::vector<Tensor> param_grads;
  Tensor output;
  Tensor output_grad;  // undefined for a loss layer
};

}  // namespace glassbox::testing
