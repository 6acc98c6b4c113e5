// tools/cli/summary.cpp: `glassbox summary NET`: the network as a table, one
// row per node: output shape, learnable parameters, forward GFLOPs (2 x MACs,
// counted for convolutions and linear layers), and the layer's options. With
// --memory, also the memory of one training step, by category, compiled as
// the compile flags say (--precision bf16: the 16-bit values' bytes).
#include <cstdio>
#include <optional>

#include "tensor/parse.h"
#include "tools/cli/memory_report.h"
#include "tools/cli/step_memory.h"
#include "tools/cli/commands.h"
#include "tools/cli/flag_specs.h"
#include "tools/cli/network_arg.h"
#include "tools/cli/table.h"

namespace glassbox::cli {
namespace {

// --memory: one training step on the device, its memory by category, and what
// a forward-only plan of the same graph would keep.
// The device and the options are read before the table is printed: a bad
// flag is refused before any output.
void print_memory(const NetSpec& net, Graph& graph, int batch, const DeviceChoice& choice,
                  const CompileOptions& options) {
  const StepMemory step = measure_train_step(net, batch, choice.device, options, 0);
  std::printf("\nmemory of a training step (SGD with momentum) at batch %d on %s in %s, the allocator's peak:\n%s\n",
              batch, choice.device.str().c_str(), std::string(flag_name_of(options.precision)).c_str(),
              memory_table(step.memory, step.plan, Phase::kTraining, options.precision).c_str());
  graph.set_stored_types(options.precision);
  const MemoryPlan inference = plan_activations(graph, Phase::kInference);
  std::printf("a forward-only plan (inference: no gradients, nothing kept for backward) needs %s of activations\n",
              format_bytes(static_cast<int64_t>(inference.values.total)).c_str());
}

}  // namespace

int run_summary(const std::vector<std::string>& words) {
  const Args args("summary", summary_flags(), words);
  if (!args.has("--memory")) {
    for (const auto& [flag, value] : args.values()) {
      if (flag != "--batch") {
        throw ConfigError(cat("summary: ", flag, " is for --memory (the table itself does not depend on the device ",
                              "or on how the graph is compiled)"));
      }
    }
  }
  const NetSpec& net = network_arg(args, "summary");
  const int batch = args.int_in("--batch", 1, 1, kMaxInt);
  Graph graph = build_net(net, batch);
  std::optional<DeviceChoice> choice;
  CompileOptions options;
  if (args.has("--memory")) {
    choice = choose_device(args.get("--device", ""), "--device");
    options = compile_options_from_flags(args.values());
    if (!choice->note.empty()) std::fprintf(stderr, "glassbox: %s\n", choice->note.c_str());
    for (const std::string& note : compile_flag_notes(args.values(), choice->device)) {
      std::fprintf(stderr, "glassbox: %s\n", note.c_str());
    }
  }

  using Align = Table::Align;
  Table table({{"layer"}, {"type"}, {"output"}, {"params", Align::kRight}, {"GFLOPs", Align::kRight}, {"details"}});
  for (const Node& node : graph.nodes()) {
    if (node.is_input()) {
      table.add_row({node.name, "input", node.shape.str(), "", "", std::string(name_of(node.dtype))});
      continue;
    }
    int64_t params = 0;
    for (const ParamSpec& spec : node.layer->param_specs()) params += spec.shape.numel();
    const int64_t macs = node.layer->macs();
    table.add_row({node.name, std::string(node.layer->type()), node.shape.str(), params ? grouped(params) : "",
                   macs ? fixed(2.0 * static_cast<double>(macs) / 1e9, 3) : "", node.layer->describe()});
  }
  const double gmacs = static_cast<double>(graph.macs()) / 1e9;
  table.add_rule();
  table.add_row({"total", "", "", grouped(graph.parameter_count()), fixed(2.0 * gmacs, 3), ""});

  std::printf("%s: %s\n", net.name.c_str(), net.description.c_str());
  std::printf("batch %d, input %s\n\n", batch, graph.nodes().front().shape.str().c_str());
  std::printf("%s\n", table.str().c_str());
  std::printf("parameters: %s (%s as float32)\n", grouped(graph.parameter_count()).c_str(),
              format_bytes(graph.parameter_count() * 4).c_str());
  std::printf("forward: %s GMAC = %s GFLOP for the batch of %d (%s GMAC per %s)\n", fixed(gmacs, 3).c_str(),
              fixed(2.0 * gmacs, 3).c_str(), batch, fixed(gmacs / batch, 3).c_str(),
              net.language_model ? cat("sequence of ", net.sample[0], " tokens").c_str() : "image");
  std::printf("a training step (forward + backward) is counted as 3x the forward: %s GFLOP\n",
              fixed(6.0 * gmacs, 3).c_str());
  if (choice) print_memory(net, graph, batch, *choice, options);
  return 0;
}

}  // namespace glassbox::cli
