// optim/evaluate.h: a network's loss and accuracy over a dataset, scored
// from its logits on the host.
//
// The graph's batch is fixed, so the last batch of a test set is padded
// (Loader with drop_last off): only its real rows are scored. The loss is
// computed here from the logits, -log softmax(logits)[label] per sample in
// double precision, rather than read from the loss layer, whose mean would
// include the padding.
#pragma once

#include <cstdint>
#include <span>

#include "data/loader.h"
#include "graph/graph.h"

namespace glassbox {

struct Evaluation {
  int64_t samples = 0;
  int64_t correct = 0;      // argmax of the logits is the label (the first maximum on ties)
  double loss_sum = 0.0;    // sum over samples of -log softmax(logits)[label]
  double seconds = 0.0;     // wall time of the whole pass
  double wait_seconds = 0.0;  // of which waiting for data

  double loss() const { return samples ? loss_sum / static_cast<double>(samples) : 0.0; }
  double accuracy() const { return samples ? static_cast<double>(correct) / static_cast<double>(samples) : 0.0; }
};

// The graph's logits: the first input of its loss layer, (batch, classes).
const Tensor& logits_of(const Graph& graph);

// Adds the first `count` rows of `logits` (rows of `classes`) with their
// `labels` to `into`.
void score_rows(std::span<const float> logits, std::span<const int> labels, int count, int classes,
                Evaluation& into);

// Runs the graph forward in Phase::kInference (running statistics, no
// dropout) over one whole epoch of `loader` (epoch 0's order; give it
// shuffle off and drop_last off to see every sample once) and scores it.
// Works on a graph compiled for training or for inference.
Evaluation evaluate(Context& ctx, Graph& graph, Loader& loader);

}  // namespace glassbox
