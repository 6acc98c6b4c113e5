// train/evaluate.h: a network's loss and accuracy over a dataset.
//
// Images are scored from the logits on the host. The graph's batch is fixed,
// so the last batch of a test set is padded (Loader with drop_last off): only
// its real rows are scored. The loss is computed here from the logits,
// -log softmax(logits)[label] per sample in double precision, rather than
// read from the loss layer, whose mean would include the padding. A sample
// whose file cannot be read is not scored: the loader leaves it out of the
// rows it counts (Note [Skipped samples] in data/loader.h), and the
// evaluation counts and names it apart.
//
// A language model's windows (BatchSource::continues) are never padded, so
// its loss is the loss layer's mean, weighted by the window's T x B tokens:
// copying (T, B, V) logits to the host every window (28 MB for the medium
// LSTM) would cost more than the forward. No accuracy is scored there.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/batch_source.h"
#include "data/loader.h"
#include "graph/graph.h"

namespace glassbox {

struct Evaluation {
  int64_t samples = 0;      // rows scored: images, or a language model's tokens
  int64_t correct = 0;      // argmax of the logits is the label (the first maximum on ties)
  double loss_sum = 0.0;    // sum over samples of -log softmax(logits)[label]
  double seconds = 0.0;     // wall time of the whole pass
  double wait_seconds = 0.0;  // of which waiting for data
  // Samples left out because their file could not be read: not in `samples`.
  int64_t unreadable = 0;
  std::vector<std::string> unreadable_files;  // the first few (kSkippedNamed), "FILE: reason", in order

  bool has_accuracy = true;  // false where only the loss was scored (a language model)

  double loss() const { return samples ? loss_sum / static_cast<double>(samples) : 0.0; }
  double perplexity() const { return std::exp(loss()); }
  double accuracy() const { return samples ? static_cast<double>(correct) / static_cast<double>(samples) : 0.0; }
};

// The graph's logits: the first input of its loss layer, (..., classes).
const Tensor& logits_of(const Graph& graph);

// Adds the first `count` rows of `logits` (rows of `classes`) with their
// `labels` to `into`.
void score_rows(std::span<const float> logits, std::span<const int> labels, int count, int classes,
                Evaluation& into);

// Throws NumericalError where a logit in the first `rows` rows of `logits`
// (rows of `classes`, from the graph's last forward) is not finite:
// "CONTEXT: logit C of sample N is nan; first non-finite output: ..." (the
// places describe_non_finite finds in an inference forward, graph/finite_check.h),
// and in an fp16 graph fp16's range. Scored, such a row would be class 0 and a NaN loss.
void check_logits_finite(Context& ctx, Graph& graph, std::span<const float> logits, int64_t rows, int classes,
                         const std::string& context);

// Runs the graph forward in Phase::kInference (running statistics, no
// dropout) over one whole epoch of `batches` (epoch 0; a loader should have
// shuffle off and drop_last off to see every sample once) and scores it.
// A non-finite logit or loss is a NumericalError naming the batch (above).
// Where batches continue from each other, the graph's carried state is reset
// first (Graph::reset_carried_state). Works on a graph compiled for training
// or for inference.
Evaluation evaluate(Context& ctx, Graph& graph, BatchSource& batches);
Evaluation evaluate(Context& ctx, Graph& graph, Loader& loader);

}  // namespace glassbox
