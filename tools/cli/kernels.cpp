// tools/cli/kernels.cpp: `glassbox kernels NET`: which GPU kernels each
// layer's forward, backward-data, backward-weights and the optimizer ran in
// one training step, and how much of the step's GPU time each took.
//
// Warm-up train steps first (first calls allocate, load kernels, choose
// algorithms), then one more with the CUPTI collector attached (its own
// start-up costs land there), then the recorded step: every kernel, memcpy and
// memset, each attributed to the span that launched it through CUPTI's
// external correlation ids (tensor/kernel_trace.h), grouped by graph/kernel_map.h.
//
// Needs a CUDA device: on the CPU there are no kernels, and kernel records
// come from CUPTI. `glassbox trace` and `glassbox time` cover the CPU.
// Written without a GPU to run it on: the map is tested on hand-made records,
// the collection itself not yet.
#include <cstdio>

#include "graph/kernel_map.h"
#include "graph/layouts.h"
#include "tensor/atomic_file.h"
#include "tensor/kernel_trace.h"
#include "tensor/parse.h"
#include "tensor/runtime_info.h"
#include "tools/cli/commands.h"
#include "tools/cli/flag_specs.h"
#include "tools/cli/kernels_json.h"
#include "tools/cli/network_arg.h"
#include "tools/cli/synthetic_training.h"
#include "tools/cli/table.h"

namespace glassbox::cli {
namespace {

constexpr int kMaxSteps = 1'000'000;

std::string percent(double share) { return fixed(100.0 * share, 1) + "%"; }

// `mixed`: a bf16 or fp16 graph, whose layers say what they compute in. A
// graph with NHWC values says each layer's layout too.
std::string kernels_table(const KernelMap& map, const Graph& graph, bool mixed) {
  const bool layouts = any_channels_last(graph.nodes());
  std::vector<Table::Column> columns = {{"layer"}, {"pass"}};
  if (mixed) columns.push_back({"precision"});
  if (layouts) columns.push_back({"layout"});
  columns.insert(columns.end(), {{"kernel"}, {"family"}, {"count", Table::Align::kRight},
                                 {"GPU ms", Table::Align::kRight}, {"share", Table::Align::kRight}});
  Table table(columns);
  // The row's first two cells, then the precision and the layout where the table has those columns.
  auto row = [&](std::string layer, std::string pass, std::string precision, std::string layout,
                 std::vector<std::string> rest) {
    std::vector<std::string> cells = {std::move(layer), std::move(pass)};
    if (mixed) cells.push_back(std::move(precision));
    if (layouts) cells.push_back(std::move(layout));
    cells.insert(cells.end(), rest.begin(), rest.end());
    return cells;
  };
  for (const SpanKernels& span : map.spans) {
    const std::string precision = span_precision(span, graph);
    const std::string layout = span_layout(span, graph);
    if (span.kernels.empty()) {
      const std::string host = fused_host(span, graph);
      table.add_row(row(span.name, std::string(pass_name(span.pass)), precision, layout,
                        {host.empty() ? "(no kernels)" : "(run by " + host + ")", "", "0", fixed(0.0, 3), ""}));
      continue;
    }
    bool first = true;
    for (const KernelGroup& group : span.kernels) {
      table.add_row(row(first ? span.name : "", first ? std::string(pass_name(span.pass)) : "",
                        first ? precision : "", first ? layout : "",
                        {group.name, std::string(name_of(group.family)), std::to_string(group.count),
                         fixed(group.gpu_ms, 3), percent(group.share)}));
      first = false;
    }
    if (span.kernels.size() > 1) {
      table.add_row(row("", "", "", "",
                        {"(all of " + span.name + " " + std::string(pass_name(span.pass)) + ")", "",
                         std::to_string(span.count), fixed(span.gpu_ms, 3), percent(span.share)}));
    }
  }
  table.add_rule();
  table.add_row(row("attributed", "", "", "",
                    {"", "", std::to_string(map.attributed_records), fixed(map.attributed_ms, 3),
                     percent(map.coverage)}));
  return table.str();
}

std::string families_table(const KernelMap& map) {
  Table table({{"family"}, {"count", Table::Align::kRight}, {"GPU ms", Table::Align::kRight},
               {"share", Table::Align::kRight}});
  for (const FamilyTotal& family : map.families) {
    table.add_row({std::string(name_of(family.family)), std::to_string(family.count), fixed(family.gpu_ms, 3),
                   percent(family.share)});
  }
  table.add_rule();
  table.add_row({"all", std::to_string(map.records), fixed(map.gpu_ms, 3), percent(map.gpu_ms > 0 ? 1.0 : 0.0)});
  return table.str();
}

std::string unattributed_table(const KernelMap& map) {
  Table table({{"kernel (outside every span)"}, {"family"}, {"count", Table::Align::kRight},
               {"GPU ms", Table::Align::kRight}, {"share", Table::Align::kRight}});
  for (const KernelGroup& group : map.unattributed) {
    table.add_row({group.name, std::string(name_of(group.family)), std::to_string(group.count),
                   fixed(group.gpu_ms, 3), percent(group.share)});
  }
  return table.str();
}

}  // namespace

int run_kernels(const std::vector<std::string>& words) {
  const Args args("kernels", kernels_flags(), words);
  const NetSpec& net = network_arg(args, "kernels");
  CompileOptions options = compile_options_from_flags(args.values());
  const DeviceChoice choice = choose_device(args.get("--device", ""), "--device");
  const int batch = args.int_in("--batch", net.default_batch(choice.device), 1, kMaxInt);
  const int warmup = args.int_in("--warmup", 2, 0, kMaxSteps);
  const std::string json_out = args.get("--json", "");
  if (!choice.device.is_cuda()) {  // after the flags, so that a bad one is named first
    const std::string why = choice.note.empty() ? "" : " (no usable GPU: " + cuda_availability().reason + ")";
    throw ConfigError(cat("kernels: needs a CUDA device: kernel records come from CUPTI, and ", choice.device.str(),
                          " runs no kernels", why, "; on the CPU, `glassbox trace ", net.name,
                          "` shows each layer's passes and `glassbox time ", net.name, "` their times"));
  }
  if (!json_out.empty()) check_writable(json_out);  // before the run, not after it

  Context ctx = Context::on(choice.device);
  for (const std::string& note : compile_flag_notes(args.values(), choice.device)) {
    std::fprintf(stderr, "glassbox: %s\n", note.c_str());
  }
  options.layer_timing = true;  // spans with ids, read back by graph.spans()
  SyntheticTraining run(ctx, net, batch, options);
  Graph& graph = run.graph();
  run.warm_up(warmup);
  KernelTrace trace(ctx);
  graph.step_spans().set_listener(&trace);
  run.step();  // the first step under CUPTI, not recorded
  trace.start_step();
  run.train_step();
  const std::vector<KernelRecord> records = trace.finish_step();
  graph.step_spans().set_listener(nullptr);
  run.check_loss();
  const std::vector<SpanTime> spans = graph.spans();
  const KernelMap map = map_kernels(spans, records);

  const RuntimeInfo info = runtime_info(ctx);
  double spans_ms = 0.0;
  for (const SpanTime& span : spans) spans_ms += span.duration_ms;
  std::printf("%s on %s (%s), batch %d, %s: %d warm-up train steps, one under CUPTI, then the recorded one\n",
              net.name.c_str(), info.device.c_str(), info.device_name.c_str(), batch, info.precision.c_str(), warmup);
  std::printf("%d records (kernels, copies, sets): %s ms of GPU time; the %zu spans last %s ms on the stream\n\n",
              map.records, fixed(map.gpu_ms, 3).c_str(), spans.size(), fixed(spans_ms, 3).c_str());
  std::printf("%s\n", kernels_table(map, graph, is_mixed(options.precision)).c_str());
  std::printf("%s\n", families_table(map).c_str());
  std::printf("coverage: %s of %s ms of GPU time attributed to a layer's pass or the optimizer (%s)\n",
              fixed(map.attributed_ms, 3).c_str(), fixed(map.gpu_ms, 3).c_str(), percent(map.coverage).c_str());
  if (!map.unattributed.empty()) {
    std::printf("unattributed: %d records, %s ms, launched outside every span (zeroing gradients, copies of the "
                "loss):\n%s", map.records - map.attributed_records, fixed(map.unattributed_ms, 3).c_str(),
                unattributed_table(map).c_str());
  }
  const uint64_t dropped = trace.dropped();
  if (dropped > 0) {
    std::printf("warning: CUPTI dropped %llu records for want of buffer space: the totals above miss them\n",
                static_cast<unsigned long long>(dropped));
  }
  if (!json_out.empty()) {
    write_file_atomically(json_out, kernels_json(map, graph, info, net.name, batch, dropped).dump(2) + "\n");
    std::printf("wrote %s\n", json_out.c_str());
  }
  return 0;
}

}  // namespace glassbox::cli
