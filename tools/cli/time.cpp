// tools/cli/time.cpp: `glassbox time NET`: where a training step's time goes.
//
// Runs forward + backward (no update, like `caffe time`), or with --inference
// the forward of a graph compiled for inference, with a mark recorded
// between consecutive layers in stream order, reads the marks after each step
// (no host synchronisation per layer), and prints each layer's mean forward
// backward-data, backward-weights (or whole backward) time with its analytic
// FLOPs and bytes, achieved rates and fraction of the device's roofline
// (roofline.h), the cuDNN algorithms it chose, and the sum of the layers
// against the separately measured step time; --json writes it all (time_json.h).
// Under mpirun, every rank then runs data-parallel train steps and rank 0
// adds their split and a line per gradient bucket (time_data_parallel.h).
#include <omp.h>

#include <cstdio>

#include "data/synthetic.h"
#include "graph/compile_flags.h"
#include "graph/finite_check.h"
#include "graph/memory_plan.h"
#include "graph/layouts.h"
#include "graph/mixed_precision.h"
#include "optim/data_parallel_job.h"
#include "optim/replica_check.h"
#include "optim/step_replay.h"
#include "tensor/atomic_file.h"
#include "tensor/cpu_blas.h"
#include "tensor/device_peaks.h"
#include "tensor/event_timer.h"
#include "tensor/machine_load.h"
#include "tensor/machine_state.h"
#include "tensor/parse.h"
#include "tensor/runtime_info.h"
#include "tools/cli/commands.h"
#include "tools/cli/data_parallel_args.h"
#include "tools/cli/flag_specs.h"
#include "tools/cli/layer_means.h"
#include "tools/cli/memory_report.h"
#include "tools/cli/network_arg.h"
#include "tools/cli/roofline.h"
#include "tools/cli/table.h"
#include "tools/cli/time_data_parallel.h"
#include "tools/cli/time_json.h"

namespace glassbox::cli {
namespace {

constexpr int kMaxSteps = 1'000'000;

// After the per-layer table: in a job of several ranks, the data-parallel
// steps (every rank runs them; rank 0 prints).
int finish_time(Context& ctx, Graph& graph, Communicator& communicator, const GradientSyncOptions& sync, int warmup,
                int steps, bool speaks) {
  if (communicator.size() == 1) return 0;
  const std::string report = time_data_parallel(ctx, graph, communicator, sync, warmup, steps);
  if (speaks) std::printf("%s", report.c_str());
  return 0;
}

// What every rank of a data-parallel `time` must share (optim/replica_check.h):
// the network at one batch, and every flag that decides the steps (a rank
// with more steps, another bucket size or precision would start all-reduces
// no other rank joins), each sent whether given or not, so that every rank
// compares every one; --json too, which only rank 0 writes (another rank's
// would be ignored in silence). --device (cuda:N by rank), --comm-timeout and
// the CPU's thread flags may differ.
ReplicaDescription time_replica(const Args& args, const NetSpec& net, int batch, int warmup, int steps) {
  ReplicaDescription replica{.network = net.name, .batch = batch};
  replica.settings = {{"--warmup", cat(warmup)}, {"--steps", cat(steps)}};
  for (const FlagSpec& flag : time_flags()) {
    const std::string& name = flag.name;
    if (name == "--batch" || name == "--warmup" || name == "--steps" || name == "--device" ||
        name == "--comm-timeout" || name == "--fixed-threads") {
      continue;
    }
    const std::string given = flag.value_name.empty() ? "given" : args.get(name, "");
    replica.settings.emplace_back(name, args.has(name) ? given : "not given");
  }
  return replica;
}

// The algorithms column: the layer's own choices, and a fused ReLU (Note [A
// ReLU fused into its producer], graph/fusion.h) named on both layers' rows.
std::string algorithms_cell(const Graph& graph, const Node& node) {
  if (node.fused_into >= 0) {
    return cat("fused into ", graph.nodes()[static_cast<size_t>(node.fused_into)].name,
               node.backward_fused_into >= 0 ? ", forward and backward" : "");
  }
  std::string text = node.layer->algorithms();
  if (node.layer->fused_relu() && text.find("ReLU") == std::string::npos) {
    // Note [A residual add fused into its batch norm]: the add's other input named.
    const std::string residual =
        node.residual >= 0 ? cat(" after adding ", graph.nodes()[static_cast<size_t>(node.residual)].name) : "";
    text += cat(text.empty() ? "" : "; ", "ReLU applied in the layer", residual,
                node.layer->fused_relu_backward() ? ", forward and backward" : "");
  }
  return text;
}

}  // namespace

int run_time(const std::vector<std::string>& words) {
  const Args args("time", time_flags(), words);
  const NetSpec& net = network_arg(args, "time");
  // Checked before anything runs; the verb's own choices are set below.
  CompileOptions options = compile_options_from_flags(args.values());
  const Precision precision = options.precision;
  const DeviceChoice choice = choose_device(args.get("--device", ""), "--device");
  const JobPlacement placement = job_placement();
  const Device device =
      device_for_rank(choice.device, args.get("--device", ""), placement, cuda_availability().device_count);
  share_cpu_cores(device, placement);
  const bool speaks = placement.rank == 0;  // the other ranks time in silence
  if (!choice.note.empty() && speaks) std::fprintf(stderr, "glassbox: %s\n", choice.note.c_str());
  // Note [Threads on a shared machine]: before anything is compiled.
  if (const std::string fit = fit_measuring_threads(!device.is_cuda(), args.has("--fixed-threads"));
      !fit.empty() && speaks) {
    std::fprintf(stderr, "glassbox: %s\n", fit.c_str());
  }
  for (const std::string& note : compile_flag_notes(args.values(), device)) {
    if (speaks) std::fprintf(stderr, "glassbox: %s\n", note.c_str());
  }
  const int batch = args.int_in("--batch", net.default_batch(device), 1, kMaxInt);
  const int steps = args.int_in("--steps", 5, 1, kMaxSteps);
  const int warmup = args.int_in("--warmup", 2, 0, kMaxSteps);
  const DataParallelArgs parallel = data_parallel_args(args);
  for (const std::string& note : single_process_notes(args, placement.size)) {
    std::fprintf(stderr, "glassbox: %s\n", note.c_str());
  }
  const std::string json_path = args.get("--json", "");
  if (args.has("--json") && speaks) check_writable(json_path);  // before the run, not after it
  const GradientSyncOptions& sync = parallel.sync;
  const bool inference = args.has("--inference");
  const bool replayed = args.has("--cuda-graph");  // docs/cuda_graphs.md
  if (replayed && placement.size > 1) {
    throw ConfigError(cat("--cuda-graph replays the steps of one process; under mpirun (", placement.size,
                          " ranks) a data-parallel step waits on the host between its all-reduce buckets. Run it "
                          "without mpirun"));
  }
  if (replayed && !device.is_cuda()) {
    throw ConfigError(cat("--cuda-graph needs a CUDA device: a step is replayed as a CUDA graph; the device is ",
                          device.str()));
  }
  if (inference && placement.size > 1) {
    throw ConfigError(cat("time: --inference times one process's forward; under mpirun (", placement.size,
                          " ranks) time runs data-parallel training steps. Run it without mpirun"));
  }

  Context ctx = Context::on(device);
  const std::unique_ptr<Communicator> communicator = make_communicator(ctx, parallel.communicator);
  Graph graph = build_net(net, batch);
  options.phase = inference ? Phase::kInference : Phase::kTraining;
  options.layer_timing = true;
  graph.compile(ctx, options);
  fill_synthetic_batch(ctx, graph, net.classes);
  check_replicas(ctx, graph, *communicator, time_replica(args, net, batch, warmup, steps));  // before any step

  // Every step's loss is read and checked: a run that went to NaN stops,
  // naming the step, instead of timing garbage.
  auto step = [&] {
    graph.forward(ctx, options.phase);
    if (!inference) graph.backward(ctx, Graph::ParamGrads::kReplace);  // a training step's backward
  };
  int64_t step_number = 0;
  for (int i = 0; i < warmup; ++i) {
    step();
    checked_loss(ctx, graph, ++step_number);
  }

  ctx.allocator().reset_peak();  // the timed steps' peak, not compile's or the algorithm search's
  EventTimer step_marks(ctx, 2);
  const MachineSample machine_start = sample_machine(ctx);
  double step_ms = 0.0;
  float first_loss = 0.0f, last_loss = 0.0f;
  std::vector<LayerTime> mean;
  for (int s = 0; s < steps; ++s) {
    step_marks.record(0);
    step();
    step_marks.record(1);
    step_ms += step_marks.elapsed_ms(0, 1) / steps;
    last_loss = checked_loss(ctx, graph, ++step_number);
    if (s == 0) first_loss = last_loss;
    add_layer_times(graph, steps, mean);
  }

  const MachineSample machine_end = sample_machine(ctx);
  const std::vector<std::pair<std::string, std::string>> machine =
      machine_fields(machine_start, machine_end, int64_t{steps} * batch);
  if (const std::string busy = others_busy_warning(others_busy_between(machine_start, machine_end).value_or(0.0),
                                                   usable_cores(), device.is_cuda() ? 1 : omp_get_max_threads());
      !busy.empty() && speaks) {
    std::fprintf(stderr, "glassbox: warning: %s\n", busy.c_str());
  }

  // --cuda-graph: the same steps again, replayed as one CUDA graph launch
  // each (Note [Replaying a step]). A replay cannot mark its layers, so the
  // spans pause and the per-layer times stay the eager steps'.
  double replayed_ms = 0.0;
  size_t graph_nodes = 0;
  if (replayed) {
    graph.step_spans().set_paused(true);
    StepReplay replay(ctx);
    const ReplayKey key{.graph = graph.replay_generation(), .step = inference ? 2 : 1};
    for (int i = 0; i < 2; ++i) {  // the eager warm-up step, then the captured one
      replay.run(ctx, key, step);
      checked_loss(ctx, graph, ++step_number);
    }
    for (int s = 0; s < steps; ++s) {
      step_marks.record(0);
      replay.run(ctx, key, step);
      step_marks.record(1);
      replayed_ms += step_marks.elapsed_ms(0, 1) / steps;
      checked_loss(ctx, graph, ++step_number);
    }
    graph.step_spans().set_paused(false);
    graph_nodes = replay.counts().nodes;
  }
  if (!speaks) return finish_time(ctx, graph, *communicator, sync, warmup, steps, speaks);
  // Rates in TFLOP/s on a GPU, GFLOP/s on a CPU: numbers a person can read.
  const bool gpu = device.is_cuda();
  const double rate_scale = gpu ? 1e12 : 1e9;
  const std::string unit = gpu ? "TFLOP/s" : "GFLOP/s";
  const double work_scale = gpu ? 1e9 : 1e6;  // a pass's FLOPs: GFLOP on a GPU's batches, MFLOP on a CPU's
  const RuntimeInfo info = runtime_info(ctx);
  const RooflinePeak peak = choose_peak(info.device_name, precision, measure_peak(ctx));
  const Peak roof{peak.flops_per_s, peak.bytes_per_s};
  // One row per layer and pass, the layer named on its first row only.
  using Align = Table::Align;
  std::vector<Table::Column> columns = {{"layer"}, {"type"}, {"output"}, {"pass"}, {"ms", Align::kRight},
                                        {gpu ? "GFLOP" : "MFLOP", Align::kRight}, {"MB", Align::kRight},
                                        {unit, Align::kRight}, {"GB/s", Align::kRight}, {"FLOP/B", Align::kRight},
                                        {"% roofline", Align::kRight}};
  // A 16-bit graph's layers compute in 16 bits or in fp32 staging (Note [Mixed precision]): each says which.
  const bool mixed = is_mixed(precision);
  if (mixed) columns.push_back({"precision"});
  // Where values are stored NHWC (Note [Channels-last values]), each layer's order.
  const bool layouts = any_channels_last(graph.nodes());
  if (layouts) columns.push_back({"layout"});
  columns.push_back({gpu ? "cuDNN algorithms" : "CPU path"});  // Layer::algorithms(): blank for most layers
  Table table(columns);
  double forward_sum = 0.0, backward_sum = 0.0;
  for (const LayerTime& t : mean) {
    const Node& node = graph.nodes()[static_cast<size_t>(t.node)];
    bool first = true;
    for (const PassCost& p : layer_passes(graph, t)) {
      std::vector<std::string> row = {first ? node.name : "", first ? std::string(node.layer->type()) : "",
                                      first ? node.shape.str() : "", std::string(pass_name(p.pass)), fixed(p.ms, 3),
                                      fixed(static_cast<double>(p.flops) / work_scale, 2),
                                      fixed(static_cast<double>(p.bytes) / 1e6, 3),
                                      p.flops > 0 ? fixed(flops_per_s(p) / rate_scale, 2) : "",
                                      fixed(bytes_per_s(p) / 1e9, 2), p.flops > 0 ? fixed(intensity(p), 2) : "",
                                      fixed(100.0 * roofline_fraction(p, roof), 1)};
      if (first && mixed) row.push_back(precision_path(node));
      if (first && layouts) row.push_back(layout_path(graph.nodes(), node));
      if (first) row.push_back(algorithms_cell(graph, node));
      table.add_row(row);
      first = false;
    }
    forward_sum += t.forward_ms;
    backward_sum += t.backward_ms;
  }
  table.add_rule();
  table.add_row({"sum of layers", "", "", "", fixed(forward_sum + backward_sum, 3)});

  const std::string how = !gpu ? cat("CPU path: ", cpu_path_name(), " + OpenMP, ", info.cpu_threads, " thread",
                                     info.cpu_threads == 1 ? "" : "s")
                          : cat(options.layers.algo_search == AlgoSearch::kMeasured ? "cuDNN algorithms measured"
                                                                                    : "cuDNN heuristics",
                                options.layers.cudnn_api == CudnnApi::kAuto
                                    ? ""
                                    : cat(" (--cudnn-api ", name_of(options.layers.cudnn_api), ")"));
  std::printf("%s on %s (%s), batch %d, %s, %s%s\n", net.name.c_str(), info.device.c_str(),
              info.device_name.c_str(), batch, info.precision.c_str(), how.c_str(),
              options.layers.deterministic ? ", deterministic" : "");
  std::printf("%d warm-up, then %d timed %s; times are means per step\n", warmup, steps,
              inference ? "inference forwards (a graph compiled for inference)" : "forward+backward steps");
  std::printf("peaks: %s %s, %s GB/s (%s); measured %s %s, %s GB/s (%s)\n",
              fixed(peak.flops_per_s / rate_scale, 2).c_str(), unit.c_str(), fixed(peak.bytes_per_s / 1e9, 1).c_str(),
              peak.source.c_str(), fixed(peak.measured.flops_per_s / rate_scale, 2).c_str(), unit.c_str(),
              fixed(peak.measured.bytes_per_s / 1e9, 1).c_str(), peak.measured.how.c_str());
  std::printf("FLOPs and bytes are analytic, each tensor read or written once (docs/roofline.md); "
              "%% roofline = max(FLOP/peak, bytes/bandwidth) / time\n\n");
  std::printf("%s\n", table.str().c_str());
  const double layers_ms = forward_sum + backward_sum;
  if (inference) {
    std::printf("sum of layers: forward %s ms\n", fixed(forward_sum, 3).c_str());
  } else {
    std::printf("sum of layers: forward %s ms + backward %s ms = %s ms\n", fixed(forward_sum, 3).c_str(),
                fixed(backward_sum, 3).c_str(), fixed(layers_ms, 3).c_str());
  }
  std::printf("measured step: %s ms; outside the layers: %s ms (%s%%)\n", fixed(step_ms, 3).c_str(),
              fixed(step_ms - layers_ms, 3).c_str(), fixed(100.0 * (step_ms - layers_ms) / step_ms, 1).c_str());
  if (replayed) {
    std::printf("replayed as a CUDA graph: %s ms a step (%zu nodes in one launch), %s of the measured step\n",
                fixed(replayed_ms, 3).c_str(), graph_nodes, fixed(replayed_ms / step_ms, 2).c_str());
  }
  const int passes_of_macs = inference ? 1 : 3;  // forward; forward, backward-data and backward-weights
  const double step_flops = passes_of_macs * 2.0 * static_cast<double>(graph.macs());
  std::printf("throughput: %s %s/s, %s %s (analytic: %d x 2 x %s GMAC per step)\n",
              fixed(static_cast<double>(batch * net.items_per_sample()) / (step_ms / 1e3), 1).c_str(),
              std::string(net.item_name()).c_str(), fixed(step_flops / (step_ms / 1e3) / rate_scale, 2).c_str(),
              unit.c_str(), passes_of_macs, fixed(static_cast<double>(graph.macs()) / 1e9, 3).c_str());
  std::printf("loss: %s at the first timed step, %s at the last\n", fixed(first_loss, 6).c_str(),
              fixed(last_loss, 6).c_str());
  std::printf("\nmemory over the timed steps (%s):\n%s", inference ? "inference forward" : "forward + backward, no optimizer",
              memory_table(ctx.memory(), graph.memory_plan(), options.phase, options.precision).c_str());
  std::printf("\nthe machine over the timed steps (tensor/machine_state.h):\n");
  for (const auto& [key, value] : machine) std::printf("  %-11s %s\n", key.c_str(), value.c_str());
  if (args.has("--json")) {
    TimeRun run{net.name,    batch,    steps,     step_ms,     info,       peak,
                ctx.memory(), machine, inference, replayed_ms, graph_nodes};
    run.item = net.item_name();
    run.items_per_sample = net.items_per_sample();
    write_file_atomically(json_path, time_json(run, graph, mean));
    std::printf("\nwrote %s\n", json_path.c_str());
  }
  return finish_time(ctx, graph, *communicator, sync, warmup, steps, speaks);
}

}  // namespace glassbox::cli
