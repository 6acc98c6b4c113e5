// train/evaluate.cpp
#include "train/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "tensor/copy.h"

namespace glassbox {

const Tensor& logits_of(const Graph& graph) {
  const Node& loss = graph.nodes()[static_cast<size_t>(graph.loss_node())];
  return graph.nodes()[static_cast<size_t>(loss.inputs[0])].value;
}

void score_rows(std::span<const float> logits, std::span<const int> labels, int count, int classes,
                Evaluation& into) {
  for (int n = 0; n < count; ++n) {
    const std::span<const float> row = logits.subspan(static_cast<size_t>(n) * classes, static_cast<size_t>(classes));
    const auto best = std::max_element(row.begin(), row.end());
    const double top = *best;
    double sum = 0.0;  // log-sum-exp, shifted by the maximum so that nothing overflows
    for (float z : row) sum += std::exp(static_cast<double>(z) - top);
    const int label = labels[static_cast<size_t>(n)];
    if (label < 0 || label >= classes) {
      throw Error(cat("score_rows: label ", label, " of row ", n, " is not one of the ", classes, " classes"));
    }
    into.loss_sum += top + std::log(sum) - static_cast<double>(row[static_cast<size_t>(label)]);
    into.correct += (best - row.begin()) == label ? 1 : 0;
    ++into.samples;
  }
}

Evaluation evaluate(Context& ctx, Graph& graph, BatchSource& batches) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const Tensor& labels = graph.input("labels");
  const Tensor& logits = logits_of(graph);
  const int classes = static_cast<int>(logits.shape().dims().back());
  Evaluation result;
  result.has_accuracy = !batches.continues();
  if (batches.continues()) graph.reset_carried_state(ctx);
  batches.start_epoch(0);
  while (const int64_t count = batches.next(graph)) {
    graph.forward(ctx, Phase::kInference);
    if (batches.continues()) {  // whole windows: the loss layer's mean is exact
      result.loss_sum += static_cast<double>(graph.loss(ctx)) * static_cast<double>(count);
      result.samples += count;
    } else {
      score_rows(to_float_vector(ctx, logits), to_vector<int>(ctx, labels), static_cast<int>(count), classes, result);
    }
  }
  const LoaderStats stats = batches.stats();
  result.wait_seconds = stats.wait_seconds;
  result.unreadable = stats.skipped;
  result.unreadable_files = stats.skipped_files;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

Evaluation evaluate(Context& ctx, Graph& graph, Loader& loader) {
  LoaderBatches batches(loader);
  return evaluate(ctx, graph, batches);
}

}  // namespace glassbox
