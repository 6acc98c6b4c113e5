// tools/cli/scale.cpp: `glassbox scale NET --gpus 1,2,4,8 --link nvlink`:
// the data-parallel step predicted for each rank count from this machine's
// measured layer times and an alpha-beta model of the all-reduce
// (optim/scale_model.h, docs/scaling.md), bucket by bucket, with overlap.
#include <cstdio>

#include "graph/compile_flags.h"
#include "optim/scale_model.h"
#include "tensor/event_timer.h"
#include "tensor/parse.h"
#include "tensor/runtime_info.h"
#include "tools/cli/commands.h"
#include "tools/cli/data_parallel_args.h"
#include "tools/cli/flag_specs.h"
#include "tools/cli/layer_means.h"
#include "tools/cli/network_arg.h"
#include "tools/cli/synthetic_training.h"
#include "tools/cli/table.h"

namespace glassbox::cli {
namespace {

// The mean of `steps` train steps after `warmup`, per layer, as scale_step reads it.
MeasuredStep measure(Context& ctx, SyntheticTraining& run, int warmup, int steps) {
  Graph& graph = run.graph();
  run.warm_up(warmup);
  EventTimer marks(ctx, 2);
  double step_ms = 0.0;
  std::vector<LayerTime> mean;
  for (int s = 0; s < steps; ++s) {
    marks.record(0);
    run.train_step();
    marks.record(1);
    step_ms += marks.elapsed_ms(0, 1) / steps;
    run.check_loss();
    add_layer_times(graph, steps, mean);
  }
  MeasuredStep measured;
  std::map<int, size_t> bytes;  // node -> its gradients' bytes
  for (const Graph::ParameterRange& range : graph.parameter_ranges()) bytes[range.node] = range.end - range.begin;
  double layers_ms = 0.0;
  for (auto it = mean.rbegin(); it != mean.rend(); ++it) {  // backward order
    measured.backward.push_back({graph.nodes()[static_cast<size_t>(it->node)].name, it->backward_ms,
                                 bytes.contains(it->node) ? bytes.at(it->node) : 0});
  }
  for (const LayerTime& t : mean) {
    measured.forward_ms += t.forward_ms;
    layers_ms += t.forward_ms + t.backward_ms;
  }
  measured.optimizer_ms = std::max(0.0, step_ms - layers_ms);  // the update, zeroing, and the rest
  return measured;
}

}  // namespace

int run_scale(const std::vector<std::string>& words) {
  const Args args("scale", scale_flags(), words);
  const NetSpec& net = network_arg(args, "scale");
  CompileOptions options = compile_options_from_flags(args.values());  // checked before anything runs
  options.layer_timing = true;
  const ScaleJobArgs job = scale_job_args(args);
  const std::vector<int>& counts = job.device_counts;
  const LinkModel& link = job.link;
  const size_t bucket_bytes = job.bucket_bytes;
  const DeviceChoice choice = choose_device(args.get("--device", ""), "--device");
  if (!choice.note.empty()) std::fprintf(stderr, "glassbox: %s\n", choice.note.c_str());
  for (const std::string& note : compile_flag_notes(args.values(), choice.device)) {
    std::fprintf(stderr, "glassbox: %s\n", note.c_str());
  }
  const int batch = args.int_in("--batch", net.default_batch(choice.device), 1, kMaxInt);
  const int steps = args.int_in("--steps", 3, 1, 1'000'000);
  const int warmup = args.int_in("--warmup", 1, 0, 1'000'000);

  Context ctx = Context::on(choice.device);
  SyntheticTraining run(ctx, net, batch, options);
  const MeasuredStep measured = measure(ctx, run, warmup, steps);
  const RuntimeInfo info = runtime_info(ctx);

  std::printf("%s, batch %d per device, %s: its train step measured on %s (%s), mean of %d after %d warm-up\n",
              net.name.c_str(), batch, info.precision.c_str(), info.device.c_str(), info.device_name.c_str(), steps,
              warmup);
  std::printf("link: %s, %s GB/s per direction, %s us per message; gradient buckets of %s MiB\n"
              "step: the buckets all-reduced during backward; no overlap: all of them after it\n\n",
              link.name.c_str(), shortest_text(link.bandwidth_gbps).c_str(), shortest_text(link.latency_us).c_str(),
              shortest_text(static_cast<double>(bucket_bytes) / (1 << 20)).c_str());
  using Align = Table::Align;
  Table table({{"devices", Align::kRight}, {"step ms", Align::kRight}, {"compute ms", Align::kRight},
               {"all-reduce ms", Align::kRight}, {"exposed ms", Align::kRight}, {"no overlap ms", Align::kRight},
               {"efficiency", Align::kRight}, {cat(net.item_name(), "/s"), Align::kRight}, {"buckets"}});
  for (int p : counts) {
    const ScaledStep with = scale_step(measured, p, link, bucket_bytes, true);
    const ScaledStep without = scale_step(measured, p, link, bucket_bytes, false);
    int rings = 0, trees = 0;
    for (const ScaledBucket& b : with.buckets) (b.algorithm == AllReduceAlgorithm::kRing ? rings : trees) += p > 1;
    table.add_row({cat(p), fixed(with.step_ms, 2), fixed(with.compute_ms, 2), fixed(with.allreduce_ms, 2),
                   fixed(with.exposed_ms, 2), fixed(without.step_ms, 2), cat(fixed(100.0 * with.efficiency, 1), "%"),
                   fixed(static_cast<double>(p) * batch * net.items_per_sample() / (with.step_ms / 1e3), 1),
                   p == 1 ? cat(with.buckets.size(), ", no all-reduce")
                          : cat(with.buckets.size(), ": ", rings, " ring, ", trees, " tree")});
  }
  std::printf("%s\n", table.str().c_str());
  std::printf(
      "Assumptions (optim/scale_model.h, docs/scaling.md): every device computes as the measured one did (fixed\n"
      "batch per device); buckets as optim/gradient_sync.h forms them, each all-reduced once backward has produced\n"
      "it, one at a time; all-reduce cost from the alpha-beta model, the cheaper of ring and tree; the same link\n"
      "between every pair of neighbouring devices. Not modelled: contention between communication and compute,\n"
      "stragglers, congestion, topology. efficiency = the one-device step / this step.%s\n",
      choice.device.is_cuda() ? ""
                              : "\nMeasured on a CPU, whose step is far slower than a GPU's: communication matters far "
                                "less here than it would on GPUs.");
  return 0;
}

}  // namespace glassbox::cli
