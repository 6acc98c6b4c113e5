// tools/cli/time_data_parallel.cpp
#include "tools/cli/time_data_parallel.h"

#include <optional>

#include "graph/finite_check.h"
#include "optim/train_step.h"
#include "tools/cli/table.h"

namespace glassbox::cli {

std::string time_data_parallel(Context& ctx, Graph& graph, Communicator& communicator,
                               const GradientSyncOptions& options, int warmup, int steps) {
  // The benchmarks' update (Note [The benchmarks' learning rate]): what is
  // timed is the step, and it must stay finite.
  Sgd sgd(ctx, graph.parameters(), graph.gradients(), kBenchmarkSgd, graph.working_parameters());
  GradientSync sync(ctx, graph, communicator, options);
  std::optional<LossScaler> scaler;  // fp16's
  if (graph.compiled_precision() == Precision::kFp16) scaler.emplace(ctx, LossScaleOptions{});
  LossScaler* scaling = scaler ? &*scaler : nullptr;
  int64_t step_number = 0;
  // Each step's reductions are watched with their deadline before the loss
  // is read (Note [Watching the previous step's reductions]): reading it
  // waits for the device, which would wait for a dead rank forever.
  for (int i = 0; i < warmup; ++i) {
    train_step(ctx, graph, sgd, &sync, scaling);
    sync.settle(ctx);
    checked_loss(ctx, graph, ++step_number);
  }
  SyncTimes mean;
  mean.buckets.resize(sync.buckets().size());  // one row per bucket below, whatever the communicator reported
  for (int s = 0; s < steps; ++s) {
    train_step(ctx, graph, sgd, &sync, scaling);
    sync.settle(ctx);
    checked_loss(ctx, graph, ++step_number);
    mean.accumulate(sync.last_times(), 1.0 / steps);
  }

  const double step_ms = mean.forward_ms + mean.backward_ms + mean.exposed_ms + mean.optimizer_ms;
  std::string out = cat("\ndata-parallel: ", communicator.size(), " ranks (", communicator.backend(), "), batch ",
                        graph.batch(), " per rank; ", sync.buckets().size(), " gradient bucket",
                        sync.buckets().size() == 1 ? "" : "s", " of up to ",
                        format_bytes(static_cast<int64_t>(options.bucket_bytes)), ", ",
                        options.overlap ? "all-reduced during backward" : "all-reduced after backward", "\n");
  out += cat(warmup, " warm-up, then ", steps, " timed train steps (SGD, lr 1e-4); means per step on rank 0\n");
  out += cat("step ", fixed(step_ms, 3), " ms = forward ", fixed(mean.forward_ms, 3), " + backward ",
             fixed(mean.backward_ms, 3), " + exposed all-reduce ", fixed(mean.exposed_ms, 3), " + optimizer ",
             fixed(mean.optimizer_ms, 3), "\n");
  out += cat("all-reduce in flight ", fixed(mean.allreduce_ms, 3), " ms per step, of which ",
             fixed(mean.allreduce_ms > 0 ? 100.0 * (1.0 - mean.exposed_ms / mean.allreduce_ms) : 0.0, 1),
             "% hidden behind backward; ", fixed(graph.batch() * communicator.size() / (step_ms / 1e3), 1),
             " images/s over all ranks\n\n");
  using Align = Table::Align;
  Table table({{"bucket", Align::kRight}, {"layers (backward order)"}, {"size", Align::kRight},
               {"ready ms", Align::kRight}, {"reduced ms", Align::kRight}});
  for (size_t b = 0; b < sync.buckets().size(); ++b) {
    const GradientBucket& bucket = sync.buckets()[b];
    const std::string layers =
        bucket.first_layer == bucket.last_layer ? bucket.first_layer : cat(bucket.first_layer, " .. ", bucket.last_layer);
    table.add_row({cat(b), layers, format_bytes(static_cast<int64_t>(bucket.bytes())), fixed(mean.buckets[b].ready_ms, 3),
                   fixed(mean.buckets[b].done_ms, 3)});
  }
  out += table.str();
  out += "(ready: backward has finished the bucket's gradients; reduced: they hold the mean over the ranks; both "
         "from the start of backward)\n";
  return out;
}

}  // namespace glassbox::cli
