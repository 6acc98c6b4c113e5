// graph/finite_check.cpp
#include "graph/finite_check.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tensor/copy.h"

namespace glassbox {
namespace {

bool all_finite(Context& ctx, const Tensor& t) {
  if (!t.defined() || t.dtype() == DType::kInt32) return true;
  const std::vector<float> values = to_float_vector(ctx, t);  // 16-bit in a bf16 or fp16 graph
  return std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); });
}

}  // namespace

const char* non_finite_name(float value) { return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf"; }

std::string fp16_range_note(const Context& ctx) {
  return ctx.precision() == Precision::kFp16 ? "; fp16 holds values up to 65504, and bf16 has fp32's range" : "";
}

std::string describe_non_finite(Context& ctx, Graph& graph) {
  return describe_non_finite(ctx, graph, graph.compiled_phase());
}

std::string describe_non_finite(Context& ctx, Graph& graph, Phase phase) {
  constexpr size_t kNamedParameters = 5;
  std::string first_output;
  std::vector<std::string> parameters;
  for (const Node& node : graph.nodes()) {
    // The data itself first: then the forward, in order, where the first
    // non-finite output is where the trouble starts.
    if (node.is_input() && first_output.empty() && !all_finite(ctx, node.value)) {
      first_output = cat("input '", node.name, "'");
    }
    if (node.is_input()) continue;
    const std::vector<ParamSpec> specs = node.layer->param_specs();
    for (size_t i = 0; i < node.params.size() && i < specs.size(); ++i) {
      if (!all_finite(ctx, node.params[i])) parameters.push_back(cat(node.name, ".", specs[i].name));
    }
  }
  if (first_output.empty()) {
    graph.forward(ctx, phase, [&](const Node& node) {
      if (first_output.empty() && !all_finite(ctx, node.value)) {
        first_output = cat(node.name, " (", node.layer->type(), ")");
      }
    });
  }
  std::string text;
  if (!first_output.empty()) text = cat("first non-finite output: ", first_output);
  if (!parameters.empty()) {
    text += cat(text.empty() ? "" : "; ", "non-finite parameters: ");
    for (size_t i = 0; i < std::min(parameters.size(), kNamedParameters); ++i) {
      text += cat(i ? ", " : "", parameters[i]);
    }
    if (parameters.size() > kNamedParameters) text += cat(" and ", parameters.size() - kNamedParameters, " more");
  }
  return text;
}

std::string describe_non_finite_step(Context& ctx, const Graph& graph, StepGradients gradients) {
  if (graph.compiled_memory_reuse() == MemoryReuse::kOn) {
    throw Error("describe_non_finite_step: the graph shares memory between values (MemoryReuse::kOn), so a step "
                "leaves only some of them; compile with MemoryReuse::kOff to check them all");
  }
  const std::vector<Node>& nodes = graph.nodes();
  std::string output, gradient;
  std::vector<std::string> parameters;
  for (const Node& node : nodes) {
    if (!node.is_input() && output.empty() && !all_finite(ctx, node.value)) {
      output = cat(node.name, " (", node.layer->type(), ")");
    }
  }
  for (auto it = nodes.rbegin(); gradients != StepGradients::kNone && it != nodes.rend(); ++it) {
    if (it->is_input()) continue;
    if (gradients == StepGradients::kAll && gradient.empty() && !all_finite(ctx, it->grad)) {
      gradient = cat("of ", it->name, " (", it->layer->type(), ")");
    }
    for (const Tensor& g : it->param_grads) {
      if (!all_finite(ctx, g)) parameters.emplace_back(g.name());
    }
  }
  std::string text;
  auto add = [&](const std::string& part) { text += cat(text.empty() ? "" : "; ", part); };
  if (!output.empty()) add(cat("first non-finite output: ", output));
  if (!gradient.empty()) add(cat("first non-finite gradient in backward order: the gradient ", gradient));
  if (!parameters.empty()) {
    add(cat("non-finite parameter gradients: ", parameters.front(),
            parameters.size() > 1 ? cat(" and ", parameters.size() - 1, " more") : std::string()));
  }
  return text;
}

float checked_loss(Context& ctx, Graph& graph, int64_t step) { return check_loss_value(ctx, graph, step, graph.loss(ctx)); }

float check_loss_value(Context& ctx, Graph& graph, int64_t step, float loss, int64_t later) {
  if (std::isfinite(loss)) return loss;
  const std::string where = describe_non_finite(ctx, graph);
  // Note [Reading a step's results a step late] (tensor/step_readback.h)
  const std::string late =
      later > 0 && !where.empty() ? cat(" (read once step ", step + later, " had run; what follows is after it)") : "";
  // Nothing non-finite now: the step's own update has moved the weights on
  // (a 16-bit overflow the loss scaler let through, as the gradients were finite).
  const std::string none =
      cat("; a forward with the weights as they are now is finite: --check-numerics checks every value at the step "
          "itself",
          fp16_range_note(ctx));
  throw NumericalError(
      cat("step ", step, ": the loss is ", non_finite_name(loss), late,
          where.empty() ? none : cat("; ", where, fp16_range_note(ctx))));
}

}  // namespace glassbox
