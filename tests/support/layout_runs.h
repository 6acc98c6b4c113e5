// tests/support/layout_runs.h: a graph trained with channels-last values
// against the same graph all NCHW (Note [Channels-last values],
// graph/layouts.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "tests/support/harness.h"

namespace glassbox::testing {

// What three SGD steps on a synthetic batch produce: the losses, the first
// step's parameter gradients and every float value (in NCHW order, memory
// reuse off so each can be read), the parameters at the end, and how many
// values the graph stored channels-last.
struct LayoutRun {
  std::vector<float> losses, gradients, parameters;
  std::vector<std::vector<float>> values;
  std::vector<std::string> names;
  int channels_last_values = 0;
};
LayoutRun train_three_steps(const std::function<Graph()>& make_graph, bool channels_last, Graph::ParamGrads param_grads);
// The same on `ctx`'s device in `precision`. Parameters and their gradients
// are read in PyTorch's order (a KRSC filter transposed back).
LayoutRun train_three_steps(Context& ctx, const std::function<Graph()>& make_graph, bool channels_last,
                            Graph::ParamGrads param_grads, Precision precision = Precision::kFp32);

// Every tensor of `views` (named parameters, gradients, momentum) in
// PyTorch's order (a KRSC filter transposed back), one after another.
std::vector<float> in_nchw_order(Context& ctx, const std::vector<NamedTensor>& views);

// The two runs agree: not bit for bit, since sums run in another order. The
// channels-last run must have stored some value NHWC and the other none, or the
// comparison would be of the NCHW graph with itself.
void expect_same_training(const LayoutRun& nhwc, const LayoutRun& nchw);

// Makes `h`'s layer read x NHWC and write y in `y_layout`, prepares it again
// with its workspace, and copies ref's values (the same layer on NCHW) over
// in those layouts.
void go_channels_last(LayerHarness& h, const LayerHarness& ref, Layout y_layout);

// What `layer` (unbound) names as its algorithms on the CPU when it reads its
// first input and writes its output NHWC, prepared as a graph prepares it:
// on NCHW first, then on the layouts it settles on.
std::string channels_last_algorithms(Layer& layer, const std::vector<Shape>& input_shapes,
                                     const PrepareOptions& prepare = {});

// A tensor of `shape` on ctx stored in `layout` and `dtype`, holding `nchw`
// (values in NCHW order, exact in `dtype`).
Tensor make_value(Context& ctx, const Shape& shape, Layout layout, DType dtype, const std::vector<float>& nchw);
// t's values in NCHW order, widened to float32.
std::vector<float> read_nchw(Context& ctx, const Tensor& t);

// h's backward against ref's (the same layer on NCHW, same values), with dx
// and the parameter gradients written, then added: written ones poisoned
// first, so an element h leaves alone shows. h's dx is NHWC where `dx_nhwc`.
void expect_backward_matches(LayerHarness& h, LayerHarness& ref, bool dx_nhwc, double tolerance,
                             const std::string& what);

}  // namespace glassbox::testing
