// tools/cli/sweep.cpp: `glassbox sweep NET --batches 1,2,4,...,256`: the
// training step's speed and memory over batch sizes, as JSON for
// `glassbox report` (docs/report.md).
//
// Each batch runs on a fresh context (its own memory statistics): the network
// built at that batch, compiled, SGD with momentum, warm-up steps, then timed
// train steps. A batch that does not fit (OutOfMemoryError; --memory-limit caps
// the allocator as in `max-batch`) is recorded with its error, and the larger
// batches are not tried: on a GPU they would not fit either; on the CPU a
// larger batch with other divisors can (`max-batch` says why), which the
// default list, powers of two, does not meet. The largest batch that
// fitted also gets its per-layer document ("largest": what `glassbox time
// --json` writes), so the report can draw its layers and roofline.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "tensor/atomic_file.h"
#include "tensor/device_peaks.h"
#include "tensor/event_timer.h"
#include "tensor/machine_load.h"
#include "tensor/machine_state.h"
#include "tensor/parse.h"
#include "tensor/runtime_info.h"
#include "tools/cli/batch_list.h"
#include "tools/cli/commands.h"
#include "tools/cli/flag_specs.h"
#include "tools/cli/layer_means.h"
#include "tools/cli/network_arg.h"
#include "tools/cli/synthetic_training.h"
#include "tools/cli/table.h"
#include "tools/cli/time_json.h"

namespace glassbox::cli {
namespace {

constexpr int kMaxSteps = 1'000'000;

struct SweepRun {
  int warmup = 2;
  int steps = 3;
  CompileOptions compile;  // the compile flags' choices (graph/compile_flags.h)
  int64_t memory_limit = 0;  // bytes; 0: the device's own
  RooflinePeak peak;         // for the per-layer document of each batch
};

// One batch: the mean train step over `run.steps` after `run.warmup`, and the
// memory it held, by category; `layers` gets the batch's per-layer, per-pass
// document (tools/cli/time_json.h) for the report's bar chart and roofline.
// Throws OutOfMemoryError where it does not fit.
nlohmann::json measure_batch(const NetSpec& net, int batch, const Device& device, const SweepRun& run,
                             std::string& layers) {
  Context ctx = Context::on(device);
  if (run.memory_limit > 0) ctx.allocator().set_limit(run.memory_limit);
  CompileOptions options = run.compile;
  options.layer_timing = true;
  SyntheticTraining training(ctx, net, batch, options);
  Graph& graph = training.graph();
  training.warm_up(run.warmup);
  EventTimer marks(ctx, 2);
  const MachineSample start = sample_machine(ctx);
  double step_ms = 0.0;
  std::vector<LayerTime> mean;
  for (int s = 0; s < run.steps; ++s) {
    marks.record(0);
    training.train_step();
    marks.record(1);
    step_ms += marks.elapsed_ms(0, 1) / run.steps;
    training.check_loss();
    add_layer_times(graph, run.steps, mean);
  }
  nlohmann::json machine = nlohmann::json::object();
  for (const auto& [key, value] : machine_fields(start, sample_machine(ctx), int64_t{run.steps} * batch)) {
    machine[key] = value;
  }
  const MemoryStats memory = ctx.memory();
  TimeRun time{net.name, batch, run.steps, step_ms, runtime_info(ctx), run.peak, memory, {}};
  time.item = net.item_name();
  time.items_per_sample = net.items_per_sample();
  layers = time_json(time, graph, mean);
  nlohmann::json categories = nlohmann::json::object();
  for (int c = 0; c < kMemoryCategoryCount; ++c) {
    categories[std::string(name_of(static_cast<MemoryCategory>(c)))] = memory.peak[static_cast<size_t>(c)];
  }
  const double items = static_cast<double>(int64_t{batch} * net.items_per_sample());
  return {{"batch", batch}, {"step_ms", step_ms}, {cat(net.item_name(), "_per_s"), items / (step_ms / 1e3)},
          {"peak_bytes", memory.peak_total}, {"memory", categories}, {"machine", machine}};
}

}  // namespace

int run_sweep(const std::vector<std::string>& words) {
  const Args args("sweep", sweep_flags(), words);
  const NetSpec& net = network_arg(args, "sweep");
  const DeviceChoice choice = choose_device(args.get("--device", ""), "--device");
  if (!choice.note.empty()) std::fprintf(stderr, "glassbox: %s\n", choice.note.c_str());
  const std::vector<int> batches = parse_batch_list("--batches", args.get("--batches", "1,2,4,...,256"));
  // A batch too large for the network's shapes is refused before any is
  // measured: found after the others, it would end the sweep unwritten.
  for (int batch : batches) (void)build_net(net, batch);
  SweepRun run;
  run.compile = compile_options_from_flags(args.values());
  for (const std::string& note : compile_flag_notes(args.values(), choice.device)) {
    std::fprintf(stderr, "glassbox: %s\n", note.c_str());
  }
  // Note [Threads on a shared machine]: before anything is compiled.
  if (const std::string fit = fit_measuring_threads(!choice.device.is_cuda(), args.has("--fixed-threads"));
      !fit.empty()) {
    std::fprintf(stderr, "glassbox: %s\n", fit.c_str());
  }
  run.warmup = args.int_in("--warmup", 2, 0, kMaxSteps);
  run.steps = args.int_in("--steps", 3, 1, kMaxSteps);
  run.memory_limit = args.has("--memory-limit") ? parse_bytes("--memory-limit", args.get("--memory-limit", "")) : 0;
  const std::string out = args.get("--out", net.name + ".sweep.json");
  check_writable(out);

  Context probe = Context::on(choice.device);
  probe.set_precision(run.compile.precision);  // the runtime's record names the precision the steps run in
  const RuntimeInfo info = runtime_info(probe);
  run.peak = choose_peak(info.device_name, run.compile.precision, measure_peak(probe));
  std::printf("%s on %s (%s), %s: train steps (SGD with momentum), %d warm-up and %d timed per batch%s\n",
              net.name.c_str(), info.device.c_str(), info.device_name.c_str(), info.precision.c_str(), run.warmup,
              run.steps,
              run.memory_limit ? cat(", memory limited to ", format_bytes(run.memory_limit)).c_str() : "");
  Table table({{"batch", Table::Align::kRight}, {"step ms", Table::Align::kRight},
               {cat(net.item_name(), "/s"), Table::Align::kRight}, {"peak memory", Table::Align::kRight}, {"note"}});
  nlohmann::json points = nlohmann::json::array();
  nlohmann::json largest = nullptr;  // the per-layer document of the largest batch that fitted
  for (int batch : batches) {
    try {
      std::string layers;
      nlohmann::json point = measure_batch(net, batch, choice.device, run, layers);
      largest = nlohmann::json::parse(layers);
      table.add_row({std::to_string(batch), fixed(point["step_ms"].get<double>(), 3),
                     fixed(point[cat(net.item_name(), "_per_s")].get<double>(), 1),
                     format_bytes(point["peak_bytes"].get<int64_t>()),
                     ""});
      points.push_back(std::move(point));
    } catch (const OutOfMemoryError& e) {
      const std::string what = e.what();
      // The table keeps the headline ("cpu: out of memory for ...: 2.76 MiB"); the JSON keeps it all.
      table.add_row({std::to_string(batch), "", "", "", "does not fit: " + what.substr(0, what.find(" ("))});
      points.push_back({{"batch", batch}, {"error", what}});
      break;  // larger batches need more memory still (the comment at the top: the CPU's exception)
    }
  }
  nlohmann::json runtime = nlohmann::json::object();
  for (const auto& [key, value] : info.fields()) runtime[key] = value;
  const nlohmann::json document = {{"kind", "glassbox.sweep"}, {"version", 1},       {"network", net.name},
                                   {"device", info.device},    {"device_name", info.device_name},
                                   {"runtime", runtime},       {"item", net.item_name()},
                                   {"points", points},         {"largest", largest}};
  write_file_atomically(out, document.dump(1) + "\n");
  std::printf("\n%s\nwrote %s (`glassbox report %s` makes the HTML report)\n", table.str().c_str(), out.c_str(),
              out.c_str());
  return 0;
}

}  // namespace glassbox::cli
