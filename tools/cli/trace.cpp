// tools/cli/trace.cpp: `glassbox trace NET --out FILE`: one training step as
// a Chrome trace (graph/chrome_trace.h), for Perfetto or chrome://tracing.
//
// Warm-up steps first (first calls allocate, load kernels, fault pages in),
// then one recorded train step: forward, backward, SGD update. Each layer's
// passes are spans (graph/step_spans.h): forward, backward-data and
// backward-weights where the layer splits its backward, a whole backward
// where it does not, and the optimizer. On the CPU the spans are the host
// clock's; on a GPU they are CUDA events in stream order. The steps after
// the warm-up alternate with and without spans (--steps of each), to report
// what recording costs; on the CPU the last step with spans is the one
// written. On a GPU one more step runs with CUPTI recording every kernel, copy
// and set (tensor/kernel_trace.h), which go on a track per stream under the
// layer spans (tools/cli/trace_kernels.h); that step is the one written.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "graph/chrome_trace.h"
#include "graph/compile_flags.h"
#include "graph/layouts.h"
#include "tensor/atomic_file.h"
#include "tensor/event_timer.h"
#include "tensor/kernel_trace.h"
#include "tensor/machine_load.h"
#include "tensor/machine_state.h"
#include "tensor/parse.h"
#include "tensor/runtime_info.h"
#include "tools/cli/commands.h"
#include "tools/cli/flag_specs.h"
#include "tools/cli/network_arg.h"
#include "tools/cli/roofline.h"
#include "tools/cli/synthetic_training.h"
#include "tools/cli/table.h"
#include "tools/cli/trace_kernels.h"

namespace glassbox::cli {
namespace {

constexpr int kMaxSteps = 1'000'000;
constexpr int kLayerTrack = 1;


double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

ChromeTrace step_trace(const Graph& graph, const std::vector<SpanTime>& spans, const RuntimeInfo& info,
                       const std::string& network, int batch, double step_ms) {
  ChromeTrace trace;
  trace.process = cat("glassbox trace ", network);
  trace.tracks.push_back({kLayerTrack, info.device == "cpu" ? "host (layer spans)" : "stream (layer spans)"});
  double end_us = 0.0;
  // Where values are NHWC, each span says its layer's layout, as `time` does.
  const bool channels_last = any_channels_last(graph.nodes());
  for (const SpanTime& span : spans) {
    TraceEvent event{.name = cat(span.name, " ", pass_name(span.pass)),
                     .category = std::string(pass_name(span.pass)),
                     .start_us = span.start_ms * 1e3,
                     .duration_us = span.duration_ms * 1e3,
                     .track = kLayerTrack};
    event.text_args = {{"layer", span.name}, {"pass", std::string(pass_name(span.pass))}};
    if (span.node >= 0) {
      const Node& node = graph.nodes()[static_cast<size_t>(span.node)];
      event.text_args.emplace_back("type", std::string(node.layer->type()));
      // An output of rank other than 4 has none to give.
      if (std::string layout = layout_path(graph.nodes(), node); channels_last && !layout.empty()) {
        event.text_args.emplace_back("layout", std::move(layout));
      }
    }
    if (span.node >= 0) {  // the analytic work and traffic of the pass (docs/roofline.md), as `time` reports it
      const PassCost cost = pass_cost(graph, span.node, span.pass, span.duration_ms);
      event.number_args.emplace_back("flops", static_cast<double>(cost.flops));
      event.number_args.emplace_back("bytes", static_cast<double>(cost.bytes));
    }
    end_us = std::max(end_us, event.start_us + event.duration_us);
    trace.events.push_back(std::move(event));
  }
  // The whole step as the parent of its spans, so the track reads as a tree.
  trace.events.insert(trace.events.begin(), TraceEvent{.name = "train step", .category = "step", .start_us = 0.0,
                                                       .duration_us = end_us, .track = kLayerTrack});
  trace.text_metadata = {{"kind", "glassbox.trace"}, {"network", network}, {"device", info.device},
                         {"device_name", info.device_name},
                         {"layout", channels_last ? "NHWC where the layers take it (each span's \"layout\")" : "NCHW"}};
  for (const auto& [key, value] : info.fields()) trace.text_metadata.emplace_back("runtime." + key, value);
  trace.number_metadata = {{"batch", batch}, {"step_ms", step_ms}, {"spans_ms", end_us / 1e3}};  // the written step
  return trace;
}

// What the spans cost, from steps with and without them: the difference of
// the medians, where it stands out of the noise (the spread of the steps
// without spans, min to max); otherwise, in words, that it does not. A
// difference inside the noise, even below zero, measures the machine, not
// the recording.
std::string recording_cost(const std::vector<double>& traced_ms, const std::vector<double>& plain_ms) {
  const double traced = median(traced_ms), plain = median(plain_ms);
  const auto [lowest, highest] = std::minmax_element(plain_ms.begin(), plain_ms.end());
  const double noise = 100.0 * (*highest - *lowest) / plain;
  const double cost = 100.0 * (traced - plain) / plain;
  const std::string steps = cat("median step ", fixed(traced, 3), " ms with spans, ", fixed(plain, 3), " ms without, ",
                                traced_ms.size(), " of each, interleaved");
  if (plain_ms.size() < 2) return cat("not measured with one step of each (", steps, "; --steps 2 or more)");
  if (std::fabs(cost) <= noise) {
    return cat("within the noise (", steps, "; the steps without spans vary by ", fixed(noise, 1),
               "%, more than the difference)");
  }
  if (cost < 0.0) {
    return cat("not measurable: the steps with spans ran faster, by more than the steps without vary (", steps,
               "; they vary by ", fixed(noise, 1), "%): the machine changed during the run");
  }
  return cat("+", fixed(cost, 1), "% (", steps, "; the steps without spans vary by ", fixed(noise, 1), "%)");
}

}  // namespace

int run_trace(const std::vector<std::string>& words) {
  const Args args("trace", trace_flags(), words);
  const NetSpec& net = network_arg(args, "trace");
  CompileOptions options = compile_options_from_flags(args.values());
  const DeviceChoice choice = choose_device(args.get("--device", ""), "--device");
  if (!choice.note.empty()) std::fprintf(stderr, "glassbox: %s\n", choice.note.c_str());
  for (const std::string& note : compile_flag_notes(args.values(), choice.device)) {
    std::fprintf(stderr, "glassbox: %s\n", note.c_str());
  }
  // Note [Threads on a shared machine]: before anything is compiled.
  if (const std::string fit = fit_measuring_threads(!choice.device.is_cuda(), args.has("--fixed-threads"));
      !fit.empty()) {
    std::fprintf(stderr, "glassbox: %s\n", fit.c_str());
  }
  const int batch = args.int_in("--batch", net.default_batch(choice.device), 1, kMaxInt);
  const int warmup = args.int_in("--warmup", 2, 0, kMaxSteps);
  const int overhead_steps = args.int_in("--steps", 3, 1, kMaxSteps);
  const std::string out = args.get("--out", net.name + ".trace.json");
  check_writable(out);  // before the run, not after it

  Context ctx = Context::on(choice.device);
  options.layer_timing = true;
  SyntheticTraining run(ctx, net, batch, options);
  Graph& graph = run.graph();
  run.warm_up(warmup);
  // What recording costs: steps with spans and without, interleaved, so that
  // both see the same machine; the last step with spans is the one written.
  EventTimer step_marks(ctx, 2);
  const MachineSample machine_start = sample_machine(ctx);
  std::vector<double> traced_ms, plain_ms;
  for (int i = 0; i < 2 * overhead_steps; ++i) {
    const bool traced = i % 2 == 1;
    graph.step_spans().set_paused(!traced);
    step_marks.record(0);
    run.train_step();
    step_marks.record(1);
    (traced ? traced_ms : plain_ms).push_back(step_marks.elapsed_ms(0, 1));
    run.check_loss();
  }
  graph.step_spans().set_paused(false);
  const MachineSample machine_end = sample_machine(ctx);
  const std::vector<std::pair<std::string, std::string>> machine =
      machine_fields(machine_start, machine_end, int64_t{2} * overhead_steps * batch);
  if (const std::string busy = others_busy_warning(others_busy_between(machine_start, machine_end).value_or(0.0),
                                                   usable_cores(), choice.device.is_cuda() ? 1 : omp_get_max_threads());
      !busy.empty()) {
    std::fprintf(stderr, "glassbox: warning: %s\n", busy.c_str());
  }
  double step_ms = traced_ms.back();
  // On a GPU, one more step with CUPTI listening (after one under CUPTI that
  // is not kept: its start-up): the written step, with its kernels.
  std::vector<KernelRecord> kernels;
  if (ctx.is_cuda()) {
    KernelTrace collector(ctx);
    graph.step_spans().set_listener(&collector);
    run.step();
    collector.start_step();
    step_marks.record(0);
    run.train_step();
    step_marks.record(1);
    kernels = collector.finish_step();
    graph.step_spans().set_listener(nullptr);
    step_ms = step_marks.elapsed_ms(0, 1);
    run.check_loss();
  }
  const std::vector<SpanTime> spans = graph.spans();

  const RuntimeInfo info = runtime_info(ctx);
  ChromeTrace trace = step_trace(graph, spans, info, net.name, batch, step_ms);
  for (const auto& [key, value] : machine) trace.text_metadata.emplace_back("machine." + key, value);
  add_kernel_events(trace, spans, kernels, kLayerTrack + 1);
  write_file_atomically(out, to_chrome_json(trace));
  double spans_ms = 0.0;
  for (const SpanTime& span : spans) spans_ms += span.duration_ms;
  std::printf("%s on %s (%s), batch %d: %d warm-up train steps, then %d with spans and %d without, interleaved\n",
              net.name.c_str(), info.device.c_str(), info.device_name.c_str(), batch, warmup, overhead_steps,
              overhead_steps);
  std::printf("the written train step (%s): %s ms; %zu spans (layer passes and the optimizer) cover %s ms of it\n",
              ctx.is_cuda() ? "one more, with CUPTI recording its kernels" : "the last with spans",
              fixed(step_ms, 3).c_str(), spans.size(), fixed(spans_ms, 3).c_str());
  if (ctx.is_cuda()) std::printf("%zu kernels, copies and sets under the spans\n", kernels.size());
  std::printf("recording's cost: %s\n", recording_cost(traced_ms, plain_ms).c_str());
  std::printf("over the timed steps (%s):\n", "tensor/machine_state.h");
  for (const auto& [key, value] : machine) std::printf("  %-11s %s\n", key.c_str(), value.c_str());
  std::printf("wrote %s: open it in https://ui.perfetto.dev or chrome://tracing, or `glassbox report %s`\n",
              out.c_str(), out.c_str());
  return 0;
}

}  // namespace glassbox::cli
