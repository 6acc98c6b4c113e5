// tests/test_evaluate.cpp: scoring logits, and evaluating a network over a
// padded test set.
#include <gtest/gtest.h>

#include <cmath>

#include "data/data_spec.h"
#include "graph/builder.h"
#include "tensor/copy.h"
#include "nets/nets.h"
#include "train/evaluate.h"

namespace glassbox {
namespace {

TEST(Evaluate, ScoresOnlyTheRealRows) {
  // Three rows of three classes; the third row is padding and must not count.
  const std::vector<float> logits = {2.0f, 1.0f, 0.0f,   // label 0: right
                                     0.0f, 0.0f, 3.0f,   // label 1: wrong
                                     9.0f, 9.0f, 9.0f};  // padding
  const std::vector<int> labels = {0, 1, 0};
  Evaluation e;
  score_rows(logits, labels, 2, 3, e);
  EXPECT_EQ(e.samples, 2);
  EXPECT_EQ(e.correct, 1);
  const double row0 = -std::log(std::exp(2.0) / (std::exp(2.0) + std::exp(1.0) + 1.0));
  const double row1 = -std::log(1.0 / (2.0 + std::exp(3.0)));
  EXPECT_NEAR(e.loss(), (row0 + row1) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(e.accuracy(), 0.5);
}

TEST(Evaluate, LargeLogitsDoNotOverflow) {
  const std::vector<float> logits = {1000.0f, 0.0f};
  const std::vector<int> labels = {1};
  Evaluation e;
  score_rows(logits, labels, 1, 2, e);
  EXPECT_NEAR(e.loss(), 1000.0, 1e-9);
  EXPECT_EQ(e.correct, 0);
}

TEST(Evaluate, ALabelOutsideTheClassesIsAnError) {
  const std::vector<float> logits = {0.0f, 1.0f};
  const std::vector<int> labels = {2};
  Evaluation e;
  try {
    score_rows(logits, labels, 1, 2, e);
    FAIL() << "label 2 of 2 classes was scored";
  } catch (const Error& err) {
    EXPECT_STREQ(err.what(), "score_rows: label 2 of row 0 is not one of the 2 classes");
  }
}

// 256 test images at batch 64 (four full batches) and at batch 50 (five,
// then one of 6, padded): every image is counted once, whatever the batch.
TEST(Evaluate, EverySampleOnceWhateverTheBatch) {
  Context ctx = Context::cpu();
  const DataSplits data = open_data("synthetic:64", Shape{1, 28, 28}, 10);
  ASSERT_EQ(data.test->size(), 256);
  Evaluation results[2];
  const int batches[2] = {64, 50};
  for (int i = 0; i < 2; ++i) {
    Graph graph = lenet(batches[i]);
    graph.compile(ctx);
    Loader loader(ctx, data.test,
                  {.batch = batches[i], .workers = 1, .shuffle = false, .mode = SampleMode::kEvaluation,
                   .drop_last = false});
    results[i] = evaluate(ctx, graph, loader);
    EXPECT_EQ(results[i].samples, 256) << "batch " << batches[i];
  }
  EXPECT_EQ(results[0].correct, results[1].correct);
  EXPECT_NEAR(results[0].loss(), results[1].loss(), 1e-5);
}

// Batches that continue from each other (a language model's windows) are
// scored by the loss layer's mean, weighted by the rows of each batch, with
// no accuracy, and the graph's carried state is reset first.
class ContinuingBatches final : public BatchSource {
 public:
  std::string describe() const override { return "three fixed batches"; }
  int64_t batches_per_epoch() const override { return 3; }
  void start_epoch(int epoch) override {
    EXPECT_EQ(epoch, 0);
    next_ = 0;
  }
  int64_t next(Graph& graph) override {
    if (next_ == 3) return 0;
    Context cpu = Context::cpu();
    std::vector<float> x(8);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(next_ + 1) * 0.25f * static_cast<float>(i);
    from_vector<float>(cpu, x, graph.input("images"));
    from_vector<int>(cpu, std::vector<int>{next_ % 2, 1}, graph.input("labels"));
    ++next_;
    return 2;
  }
  LoaderStats stats() const override { return {}; }
  bool continues() const override { return true; }

 private:
  int next_ = 0;
};

TEST(Evaluate, ContinuingBatchesAreScoredByTheLossLayer) {
  Context ctx = Context::cpu();
  GraphBuilder g;
  const Value x = g.input("images", {2, 4});
  const Value labels = g.input("labels", {2}, DType::kInt32);
  Graph graph = std::move(g).build(g.softmax_cross_entropy(g.linear(x, {.out_features = 3}), labels));
  graph.compile(ctx);
  ContinuingBatches batches;
  const Evaluation result = evaluate(ctx, graph, batches);
  // The same three batches scored one by one from the loss layer.
  double sum = 0.0;
  batches.start_epoch(0);
  while (batches.next(graph) > 0) {
    graph.forward(ctx, Phase::kInference);
    sum += 2.0 * graph.loss(ctx);
  }
  EXPECT_EQ(result.samples, 6);
  EXPECT_NEAR(result.loss(), sum / 6.0, 1e-6);
  EXPECT_NEAR(result.perplexity(), std::exp(sum / 6.0), 1e-5);
  EXPECT_FALSE(result.has_accuracy);
  EXPECT_EQ(result.correct, 0);
}

}  // namespace
}  // namespace glassbox
