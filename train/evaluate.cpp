// train/evaluate.cpp
#include "train/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "graph/finite_check.h"
#include "tensor/copy.h"

namespace glassbox {

const Tensor& logits_of(const Graph& graph) {
  const Node& loss = graph.nodes()[static_cast<size_t>(graph.loss_node())];
  return graph.nodes()[static_cast<size_t>(loss.inputs[0])].value;
}

void score_rows(std::span<const float> logits, std::span<const int> labels, int count, int classes,
                Evaluation& into) {
  if (classes < 1 || count < 0 || static_cast<size_t>(count) > labels.size() ||
      static_cast<size_t>(count) > logits.size() / static_cast<size_t>(classes)) {
    throw Error(cat("score_rows: ", count, " rows of ", classes, " classes asked of ", logits.size(), " logits and ",
                    labels.size(), " labels"));
  }
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

namespace {

// A non-finite logit or loss would be scored (max_element over a NaN row
// picks class 0) and averaged into a NaN, blamed on nothing: named instead,
// with where it starts. fp16's range (65504) is the usual cause from finite weights.
[[noreturn]] void fail_non_finite(Context& ctx, Graph& graph, const std::string& what) {
  const std::string where = describe_non_finite(ctx, graph, Phase::kInference);
  throw NumericalError(cat(what, where.empty() ? "" : "; ", where, fp16_range_note(ctx)));
}

}  // namespace

void check_logits_finite(Context& ctx, Graph& graph, std::span<const float> logits, int64_t rows, int classes,
                         const std::string& context) {
  const auto real = logits.begin() + rows * classes;  // a padded last batch's padding is not scored
  const auto bad = std::find_if(logits.begin(), real, [](float v) { return !std::isfinite(v); });
  if (bad == real) return;
  const auto at = bad - logits.begin();
  fail_non_finite(ctx, graph,
                  cat(context, ": logit ", at % classes, " of sample ", at / classes, " is ", non_finite_name(*bad)));
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
  for (int64_t batch = 1; const int64_t count = batches.next(graph); ++batch) {
    graph.forward(ctx, Phase::kInference);
    if (batches.continues()) {  // whole windows: the loss layer's mean is exact
      const float loss = graph.loss(ctx);
      if (!std::isfinite(loss)) {
        fail_non_finite(ctx, graph, cat("evaluation batch ", batch, ": the loss is ", non_finite_name(loss)));
      }
      result.loss_sum += static_cast<double>(loss) * static_cast<double>(count);
      result.samples += count;
    } else {
      const std::vector<float> values = to_float_vector(ctx, logits);  // 16-bit in a bf16 or fp16 graph
      check_logits_finite(ctx, graph, values, count, classes, cat("evaluation batch ", batch));
      score_rows(values, to_vector<int>(ctx, labels), static_cast<int>(count), classes, result);
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
