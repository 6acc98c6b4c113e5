// tools/cli/kernels_json.cpp
#include "tools/cli/kernels_json.h"

#include "graph/layouts.h"
#include "graph/mixed_precision.h"

namespace glassbox::cli {
namespace {

nlohmann::json group_json(const KernelGroup& group) {
  return {{"name", group.name},
          {"kernel", group.key},
          {"full_name", group.full_name},
          {"family", name_of(group.family)},
          {"count", group.count},
          {"gpu_ms", group.gpu_ms},
          {"share", group.share}};
}

const Node* node_of(const SpanKernels& span, const Graph& graph) {
  if (span.node < 0 || static_cast<size_t>(span.node) >= graph.nodes().size()) return nullptr;
  return &graph.nodes()[static_cast<size_t>(span.node)];
}

// The producer that does this node's `pass` (Note [A ReLU fused into its
// producer], Note [A ReLU's backward fused into its producer]): its index, or -1.
int fused_into(const Node& node, Pass pass) {
  return pass == Pass::kForward ? node.fused_into : node.backward_fused_into;
}

// The layers whose `pass` the node `index` does besides its own, in graph order.
nlohmann::json runs(const Graph& graph, int index, Pass pass) {
  nlohmann::json names = nlohmann::json::array();
  for (const Node& other : graph.nodes()) {
    if (!other.is_input() && fused_into(other, pass) == index) names.push_back(other.name);
  }
  return names;
}

nlohmann::json span_json(const SpanKernels& span, const Graph& graph) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const KernelGroup& group : span.kernels) kernels.push_back(group_json(group));
  const Node* node = node_of(span, graph);
  const bool optimizer = span.pass == Pass::kOptimizer;
  return {{"id", span.id},
          {"layer", span.name},
          {"type", node != nullptr ? std::string(node->layer->type()) : optimizer ? "SGD" : ""},
          {"pass", pass_name(span.pass)},
          {"precision", span_precision(span, graph)},
          {"layout", span_layout(span, graph)},
          {"fused_into", fused_host(span, graph)},
          {"runs", node != nullptr && !optimizer ? runs(graph, span.node, span.pass) : nlohmann::json::array()},
          {"span_ms", span.span_ms},
          {"count", span.count},
          {"gpu_ms", span.gpu_ms},
          {"share", span.share},
          {"kernels", std::move(kernels)}};
}

}  // namespace

std::string span_precision(const SpanKernels& span, const Graph& graph) {
  const Node* node = node_of(span, graph);
  return node != nullptr ? precision_path(*node) : "";
}

std::string span_layout(const SpanKernels& span, const Graph& graph) {
  const Node* node = node_of(span, graph);
  return node != nullptr ? layout_path(graph.nodes(), *node) : "";
}

std::string fused_host(const SpanKernels& span, const Graph& graph) {
  const Node* node = node_of(span, graph);
  if (node == nullptr || span.pass == Pass::kOptimizer) return "";
  const int host = fused_into(*node, span.pass);
  return host >= 0 ? graph.nodes()[static_cast<size_t>(host)].name : "";
}

nlohmann::json kernels_json(const KernelMap& map, const Graph& graph, const RuntimeInfo& info,
                            const std::string& network, int batch, uint64_t dropped) {
  nlohmann::json spans = nlohmann::json::array();
  for (const SpanKernels& span : map.spans) spans.push_back(span_json(span, graph));
  nlohmann::json families = nlohmann::json::array();
  for (const FamilyTotal& family : map.families) {
    families.push_back({{"family", name_of(family.family)}, {"count", family.count}, {"gpu_ms", family.gpu_ms},
                        {"share", family.share}});
  }
  nlohmann::json unattributed = nlohmann::json::array();
  for (const KernelGroup& group : map.unattributed) unattributed.push_back(group_json(group));
  nlohmann::json runtime = nlohmann::json::object();
  for (const auto& [key, value] : info.fields()) runtime[key] = value;
  return {{"kind", "glassbox.kernels"}, {"network", network}, {"batch", batch}, {"device", info.device},
          {"device_name", info.device_name}, {"runtime", runtime}, {"records", map.records},
          {"attributed_records", map.attributed_records}, {"gpu_ms", map.gpu_ms},
          {"attributed_ms", map.attributed_ms}, {"unattributed_ms", map.unattributed_ms},
          {"coverage", map.coverage}, {"dropped_records", dropped}, {"spans", spans}, {"families", families},
          {"unattributed", unattributed}};
}

}  // namespace glassbox::cli
