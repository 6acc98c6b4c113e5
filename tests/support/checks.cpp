// tests/support/checks.cpp
#include "tests/support/checks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "tests/support/devices.h"

namespace glassbox::testing {
namespace {

// All indices of a tensor, or a seeded sample of `limit` of them.
std::vector<int64_t> sample_indices(int64_t count, int limit, uint64_t seed) {
  std::vector<int64_t> all(static_cast<size_t>(count));
  std::iota(all.begin(), all.end(), 0);
  if (count <= limit) return all;
  std::mt19937_64 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(static_cast<size_t>(limit));
  std::sort(all.begin(), all.end());
  return all;
}

std::vector<float> plus(const std::vector<float>& a, const std::vector<float>& b, float scale_b = 1.0f) {
  std::vector<float> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] + scale_b * b[i];
  return out;
}

}  // namespace

double relative_error(const std::vector<float>& expected, const std::vector<float>& actual) {
  EXPECT_EQ(expected.size(), actual.size());
  double most = 0.0, diff = 0.0;
  for (size_t i = 0; i < expected.size() && i < actual.size(); ++i) {
    // A NaN on one side only is an infinite error (std::max would drop it); on both, it is what was expected.
    if (std::isnan(expected[i]) != std::isnan(actual[i])) return INFINITY;
    if (std::isnan(expected[i])) continue;
    most = std::max(most, std::abs(static_cast<double>(expected[i])));
    diff = std::max(diff, std::abs(static_cast<double>(expected[i]) - static_cast<double>(actual[i])));
  }
  return most > 0.0 ? diff / most : diff;
}

void expect_close(const std::vector<float>& actual, const std::vector<float>& expected,
                  double tolerance, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what << ": sizes differ";
  double scale = 0.0;
  for (float v : expected) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  const double limit = tolerance * (1.0 + scale);
  size_t worst = 0, bad = 0;
  double worst_error = -1.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double error = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    const bool ok = error <= limit;  // false for NaN
    if (!ok) ++bad;
    if (!ok && (std::isnan(error) || error > worst_error)) {
      worst = i;
      worst_error = std::isnan(error) ? INFINITY : error;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << actual.size()
                     << " elements differ beyond " << limit << "; worst at [" << worst
                     << "]: got " << actual[worst] << ", expected " << expected[worst];
}

void check_gradients(std::function<std::unique_ptr<Layer>()> make_layer,
                     std::vector<Shape> input_shapes, const GradCheckOptions& options) {
  Context ctx = Context::cpu(options.seed);
  std::unique_ptr<Layer> layer = make_layer();
  LayerHarness h(ctx, *layer, input_shapes);
  h.randomize(options.seed);
  if (options.fill) options.fill(h);
  const std::string who = layer->name() + " (" + std::string(layer->type()) + ")";

  // Every forward sees the same random stream (dropout masks).
  const uint64_t forward_seed = options.seed + 1000;
  const std::vector<float> weights = h.output_grad.defined() ? h.read(h.output_grad) : std::vector<float>{};
  auto loss = [&]() -> double {
    ctx.rng().seed(forward_seed);
    h.forward(options.phase);
    const std::vector<float> y = h.read(h.output);
    if (layer->is_loss()) return y[0];
    double sum = 0.0;  // L = sum(y * w), so dL/dy = w = the output gradient
    for (size_t i = 0; i < y.size(); ++i) sum += static_cast<double>(y[i]) * weights[i];
    return sum;
  };

  // Analytic gradients, inputs written.
  loss();
  h.zero_param_grads();
  h.backward();
  std::vector<std::vector<float>> input_grads(h.inputs.size()), param_grads(h.params.size());
  for (size_t i = 0; i < h.inputs.size(); ++i) {
    if (h.input_grads[i].defined()) input_grads[i] = h.read(h.input_grads[i]);
  }
  for (size_t j = 0; j < h.params.size(); ++j) param_grads[j] = h.read(h.param_grads[j]);

  // The contract: kAdd adds onto what is there; parameter gradients accumulate.
  std::vector<std::vector<float>> prefill(h.inputs.size());
  for (size_t i = 0; i < h.inputs.size(); ++i) {
    if (!h.input_grads[i].defined()) continue;
    prefill[i] = random_values(h.input_grads[i].numel(), options.seed + 500 + i);
    h.write(h.input_grads[i], prefill[i]);
  }
  h.backward(std::vector<GradMode>(h.inputs.size(), GradMode::kAdd));
  for (size_t i = 0; i < h.inputs.size(); ++i) {
    if (!h.input_grads[i].defined()) continue;
    expect_close(h.read(h.input_grads[i]), plus(prefill[i], input_grads[i]), 1e-5,
                 who + ": gradient of input " + std::to_string(i) + " with GradMode::kAdd");
  }
  for (size_t j = 0; j < h.params.size(); ++j) {
    expect_close(h.read(h.param_grads[j]), plus(param_grads[j], param_grads[j]), 1e-5,
                 who + ": parameter " + std::to_string(j) + " gradient after two backwards (must accumulate)");
  }
  // A layer that writes its parameter gradients (a training step's backward)
  // must not read what they held: fill them with values far from the answer.
  if (layer->writes_param_grads()) {
    for (size_t j = 0; j < h.params.size(); ++j) {
      h.write(h.param_grads[j], std::vector<float>(static_cast<size_t>(h.param_grads[j].numel()), 1e6f));
    }
    h.backward({}, GradMode::kWrite);
    for (size_t j = 0; j < h.params.size(); ++j) {
      expect_close(h.read(h.param_grads[j]), param_grads[j], 1e-5,
                   who + ": parameter " + std::to_string(j) + " gradient written (param_grad_mode kWrite)");
    }
  }

  // Central differences, element by element.
  auto check_tensor = [&](const Tensor& t, const std::vector<float>& analytic, const std::string& what) {
    std::vector<float> values = h.read(t);
    for (int64_t index : sample_indices(t.numel(), options.max_elements, options.seed + 77)) {
      const auto k = static_cast<size_t>(index);
      const float original = values[k];
      values[k] = original + static_cast<float>(options.epsilon);
      h.write(t, values);
      const double up = loss();
      values[k] = original - static_cast<float>(options.epsilon);
      h.write(t, values);
      const double down = loss();
      values[k] = original;
      h.write(t, values);
      const double numeric = (up - down) / (2.0 * options.epsilon);
      const double limit = options.abs_tolerance + options.rel_tolerance * std::fabs(numeric);
      EXPECT_NEAR(analytic[k], numeric, limit) << who << ": d loss / d " << what << "[" << index << "]";
    }
  };
  for (size_t i = 0; i < h.inputs.size(); ++i) {
    if (h.input_grads[i].defined()) check_tensor(h.inputs[i], input_grads[i], "input " + std::to_string(i));
  }
  for (size_t j = 0; j < h.params.size(); ++j) {
    check_tensor(h.params[j], param_grads[j], layer->param_specs()[j].name);
  }
}

void check_cpu_cuda_parity(std::function<std::unique_ptr<Layer>()> make_layer,
                           std::vector<Shape> input_shapes, const ParityOptions& options) {
  GLASSBOX_REQUIRE_CUDA();
  Context cpu = Context::cpu(options.seed);
  Context gpu = Context::cuda(0, options.seed);  // precision kFp32: TF32 off
  std::unique_ptr<Layer> cpu_layer = make_layer();
  std::unique_ptr<Layer> gpu_layer = make_layer();
  LayerHarness c(cpu, *cpu_layer, input_shapes);
  LayerHarness g(gpu, *gpu_layer, input_shapes);
  c.randomize(options.seed);
  if (options.fill) options.fill(c);
  g.copy_values_from(c);
  const std::string who = cpu_layer->name() + " (" + std::string(cpu_layer->type()) + ")";

  c.poison(c.output);
  g.poison(g.output);
  c.forward(options.phase);
  g.forward(options.phase);
  expect_close(g.read(g.output), c.read(c.output), options.tolerance, who + ": forward output");

  // Parameter gradients accumulate onto the same random values on both sides;
  // written input gradients start as NaN.
  for (size_t j = 0; j < c.params.size(); ++j) {
    const std::vector<float> start = random_values(c.param_grads[j].numel(), options.seed + 300 + j);
    c.write(c.param_grads[j], start);
    g.write(g.param_grads[j], start);
  }
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.input_grads[i].defined()) continue;
    c.poison(c.input_grads[i]);
    g.poison(g.input_grads[i]);
  }
  c.backward();
  g.backward();
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.input_grads[i].defined()) continue;
    expect_close(g.read(g.input_grads[i]), c.read(c.input_grads[i]), options.tolerance,
                 who + ": gradient of input " + std::to_string(i));
  }
  for (size_t j = 0; j < c.params.size(); ++j) {
    expect_close(g.read(g.param_grads[j]), c.read(c.param_grads[j]), options.tolerance,
                 who + ": gradient of parameter " + cpu_layer->param_specs()[j].name);
  }

  // GradMode::kAdd on the device adds onto what is there, like the CPU.
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.input_grads[i].defined()) continue;
    const std::vector<float> start = random_values(c.input_grads[i].numel(), options.seed + 400 + i);
    c.write(c.input_grads[i], start);
    g.write(g.input_grads[i], start);
  }
  // A forward first: a backward may use up what its forward kept (cuDNN's RNN
  // reserve space, Note [One backward per forward] in layers/lstm/lstm_cuda.cpp).
  c.forward(options.phase);
  g.forward(options.phase);
  c.backward(std::vector<GradMode>(c.inputs.size(), GradMode::kAdd));
  g.backward(std::vector<GradMode>(g.inputs.size(), GradMode::kAdd));
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.input_grads[i].defined()) continue;
    expect_close(g.read(g.input_grads[i]), c.read(c.input_grads[i]), options.tolerance,
                 who + ": gradient of input " + std::to_string(i) + " with GradMode::kAdd");
  }
}

}  // namespace glassbox::testing
