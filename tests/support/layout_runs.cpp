// tests/support/layout_runs.cpp: tests/support/layout_runs.h.
#include "tests/support/layout_runs.h"

#include <gtest/gtest.h>

#include "data/synthetic.h"
#include "graph/layouts.h"
#include "optim/sgd.h"
#include "tensor/convert.h"
#include "tensor/copy.h"
#include "tests/support/checks.h"

namespace glassbox::testing {

std::vector<float> in_nchw_order(Context& ctx, const std::vector<NamedTensor>& views) {
  std::vector<float> all;
  for (const NamedTensor& t : views) {
    const std::vector<float> values = values_in_nchw_order(ctx, t.tensor);
    all.insert(all.end(), values.begin(), values.end());
  }
  return all;
}

LayoutRun train_three_steps(const std::function<Graph()>& make_graph, bool channels_last, Graph::ParamGrads param_grads) {
  Context ctx = Context::cpu();
  return train_three_steps(ctx, make_graph, channels_last, param_grads);
}

LayoutRun train_three_steps(Context& ctx, const std::function<Graph()>& make_graph, bool channels_last,
                            Graph::ParamGrads param_grads, Precision precision) {
  Graph graph = make_graph();
  graph.compile(ctx, {.precision = precision,
                      .memory_reuse = MemoryReuse::kOff,
                      .layout = channels_last ? LayoutChoice::kNhwc : LayoutChoice::kNchw});
  fill_synthetic_batch(ctx, graph, 5);
  // The working copy too, in a bf16 or fp16 graph: the update rewrites the
  // 16-bit weights the layers read, so that each step runs on the last's.
  Sgd sgd(ctx, graph.parameters(), graph.gradients(), {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.0f},
          graph.working_parameters());
  LayoutRun r;
  for (int step = 0; step < 3; ++step) {
    if (param_grads == Graph::ParamGrads::kAccumulate) graph.zero_grad(ctx);
    graph.forward(ctx, Phase::kTraining);
    graph.backward(ctx, param_grads);
    r.losses.push_back(graph.loss(ctx));
    if (step == 0) {
      r.gradients = in_nchw_order(ctx, graph.named_views(graph.gradients()));
      for (const Node& node : graph.nodes()) {
        r.channels_last_values += node.channels_last ? 1 : 0;
        if (node.dtype != DType::kFloat32) continue;
        std::vector<float> value = to_float_vector(ctx, node.value);
        r.values.push_back(node.channels_last ? nchw_from_channels_last(value, node.shape) : value);
        r.names.push_back(node.name);
      }
    }
    sgd.step(ctx);
  }
  r.parameters = in_nchw_order(ctx, graph.named_parameters());
  return r;
}

void expect_same_training(const LayoutRun& nhwc, const LayoutRun& nchw) {
  EXPECT_GT(nhwc.channels_last_values, 0) << "the channels-last run stored every value NCHW";
  EXPECT_EQ(nchw.channels_last_values, 0) << "the NCHW run stored values NHWC";
  expect_close(nhwc.losses, nchw.losses, 1e-5, "losses");
  expect_close(nhwc.gradients, nchw.gradients, 1e-4, "parameter gradients of the first step");
  expect_close(nhwc.parameters, nchw.parameters, 1e-4, "parameters after three steps");
  ASSERT_EQ(nhwc.names, nchw.names);
  for (size_t i = 0; i < nhwc.values.size(); ++i) expect_close(nhwc.values[i], nchw.values[i], 1e-5, nhwc.names[i]);
}

Tensor make_value(Context& ctx, const Shape& shape, Layout layout, DType dtype, const std::vector<float>& nchw) {
  const Tensor wide = ctx.allocate(shape, DType::kFloat32, MemoryCategory::kActivations).with_layout(layout);
  write_in_nchw_order(ctx, nchw, wide);
  if (dtype == DType::kFloat32) return wide;
  const Tensor narrow = ctx.allocate(shape, dtype, MemoryCategory::kActivations).with_layout(layout);
  convert(ctx, wide, narrow);
  return narrow;
}

std::vector<float> read_nchw(Context& ctx, const Tensor& t) {
  if (t.dtype() == DType::kFloat32) return values_in_nchw_order(ctx, t);
  const Tensor wide = ctx.allocate(t.shape(), DType::kFloat32, MemoryCategory::kActivations).with_layout(t.layout());
  convert(ctx, t, wide);
  return values_in_nchw_order(ctx, wide);
}

void go_channels_last(LayerHarness& h, const LayerHarness& ref, Layout y_layout) {
  h.layer.set_channels_last({true}, y_layout == Layout::kNHWC);
  h.layer.prepare(h.ctx);
  h.ctx.reserve_workspace(h.layer.workspace_bytes());
  h.copy_values_from(ref);
  const Shape x = ref.inputs[0].shape(), y = ref.output.shape();
  h.inputs[0] = h.inputs[0].with_layout(Layout::kNHWC), h.input_grads[0] = h.input_grads[0].with_layout(Layout::kNHWC);
  h.output = h.output.with_layout(y_layout), h.output_grad = h.output_grad.with_layout(y_layout);
  h.write(h.inputs[0], channels_last_from_nchw(ref.read(ref.inputs[0]), x));
  const std::vector<float> dy = ref.read(ref.output_grad);
  h.write(h.output_grad, y_layout == Layout::kNHWC ? channels_last_from_nchw(dy, y) : dy);
}

std::string channels_last_algorithms(Layer& layer, const std::vector<Shape>& input_shapes,
                                     const PrepareOptions& prepare) {
  Context ctx = Context::cpu();
  layer.bind(input_shapes);
  layer.prepare(ctx, prepare);
  std::vector<bool> inputs(input_shapes.size(), false);
  inputs[0] = true;
  layer.set_channels_last(inputs, /*output=*/true);
  layer.prepare(ctx, prepare);
  return layer.algorithms();
}

void expect_backward_matches(LayerHarness& h, LayerHarness& ref, bool dx_nhwc, double tolerance,
                             const std::string& what) {
  const Shape x = ref.inputs[0].shape();
  for (GradMode mode : {GradMode::kWrite, GradMode::kAdd}) {
    ref.backward({mode}, mode);
    if (mode == GradMode::kWrite) {
      h.poison(h.input_grads[0]);
      for (const Tensor& g : h.param_grads) h.poison(g);
    }
    h.backward({mode}, mode);
    const std::string pass = what + (mode == GradMode::kWrite ? " (written)" : " (added)");
    const std::vector<float> dx = ref.read(ref.input_grads[0]);
    expect_close(h.read(h.input_grads[0]), dx_nhwc ? channels_last_from_nchw(dx, x) : dx, tolerance, pass + ": dx");
    for (size_t i = 0; i < h.param_grads.size(); ++i) {
      expect_close(h.read(h.param_grads[i]), ref.read(ref.param_grads[i]), tolerance, pass + (i ? ": db" : ": dW"));
    }
  }
}

}  // namespace glassbox::testing
