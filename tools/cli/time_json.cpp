// tools/cli/time_json.cpp
#include "tools/cli/time_json.h"

#include <nlohmann/json.hpp>

#include "graph/layouts.h"
#include "graph/mixed_precision.h"
#include "tools/cli/roofline.h"

namespace glassbox::cli {

std::string time_json(const TimeRun& run, const Graph& graph, const std::vector<LayerTime>& mean) {
  using json = nlohmann::ordered_json;  // keys in the order of the schema, for a reader
  json runtime = json::object();
  for (const auto& [key, value] : run.info.fields()) runtime[key] = value;
  json layers = json::array();
  for (const LayerTime& t : mean) {
    const Node& node = graph.nodes()[static_cast<size_t>(t.node)];
    json passes = json::array();
    for (const PassCost& p : layer_passes(graph, t)) {
      passes.push_back(
          {{"pass", std::string(pass_name(p.pass))}, {"ms", p.ms}, {"flops", p.flops}, {"bytes", p.bytes}});
    }
    layers.push_back({{"name", node.name},
                      {"type", std::string(node.layer->type())},
                      {"output", node.shape.str()},
                      {"precision", precision_path(node)},
                      {"layout", layout_path(graph.nodes(), node)},
                      // Note [A ReLU fused into its producer]: the producer that runs this ReLU's forward
                      {"fused_into", node.fused_into >= 0 ? graph.nodes()[static_cast<size_t>(node.fused_into)].name
                                                          : std::string()},
                      // Note [A ReLU's backward fused into its producer]: and its backward
                      {"backward_fused_into", node.backward_fused_into >= 0
                                                  ? graph.nodes()[static_cast<size_t>(node.backward_fused_into)].name
                                                  : std::string()},
                      // Note [A residual add fused into its batch norm]: the z this batch norm adds
                      {"residual", node.residual >= 0 ? graph.nodes()[static_cast<size_t>(node.residual)].name
                                                      : std::string()},
                      {"passes", std::move(passes)}});
  }
  auto peak = [&](MemoryCategory c) { return run.memory.peak[static_cast<size_t>(c)]; };
  const json memory = {
      {"parameters", peak(MemoryCategory::kParameters)},
      {"gradients", peak(MemoryCategory::kGradients)},
      {"optimizer_state", peak(MemoryCategory::kOptimizerState)},
      {"activations", peak(MemoryCategory::kActivations)},
      {"activation_gradients", peak(MemoryCategory::kActivationGrads)},
      {"workspace", peak(MemoryCategory::kWorkspace)},
      {"other", peak(MemoryCategory::kLayerState) + peak(MemoryCategory::kData)},  // as memory_table's "other"
      {"peak", run.memory.peak_total},
  };
  json document = {
      {"kind", "glassbox.time"},
      {"version", 1},
      {"network", run.network},
      {"batch", run.batch},
      {"device", run.info.device},
      {"device_name", run.info.device_name},
      {"runtime", std::move(runtime)},
      {"peak",
       {{"flops_per_s", run.peak.flops_per_s},
        {"bytes_per_s", run.peak.bytes_per_s},
        {"source", run.peak.source},
        {"measured_flops_per_s", run.peak.measured.flops_per_s},
        {"measured_bytes_per_s", run.peak.measured.bytes_per_s}}},
      {"phase", run.inference ? "inference" : "training"},
      {"steps", run.steps},
      {"step_ms", run.step_ms},
      {run.item + "_per_s",
       run.step_ms > 0.0 ? static_cast<double>(run.batch * run.items_per_sample) / (run.step_ms / 1e3) : 0.0},
      {"layers", std::move(layers)},
      {"memory", memory},
  };
  if (run.replayed_step_ms > 0.0) {
    document["replayed_step_ms"] = run.replayed_step_ms;
    document["graph_nodes"] = run.graph_nodes;
  }
  json machine = json::object();
  for (const auto& [key, value] : run.machine) machine[key] = value;
  document["machine"] = std::move(machine);
  return document.dump(1) + "\n";
}

}  // namespace glassbox::cli
