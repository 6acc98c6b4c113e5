// tests/test_evaluate.cpp: scoring logits, and evaluating a network over a
// padded test set and over a folder with an unreadable image in it.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "data/data_spec.h"
#include "data/image_folder.h"
#include "graph/builder.h"
#include "tensor/copy.h"
#include "nets/nets.h"
#include "tests/support/data_files.h"
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
  // More rows than the spans hold, or rows of no classes: refused, not read past the end.
  EXPECT_EQ(testing::message_of<Error>([&] { score_rows(logits, std::vector<int>{1}, 2, 1, e); }),
            "score_rows: 2 rows of 1 classes asked of 2 logits and 1 labels");
  EXPECT_EQ(testing::message_of<Error>([&] { score_rows(logits, std::vector<int>{1, 1}, 2, 2, e); }),
            "score_rows: 2 rows of 2 classes asked of 2 logits and 2 labels");
  EXPECT_THROW(score_rows(logits, labels, 1, 0, e), Error);
  EXPECT_THROW(score_rows(logits, labels, -1, 2, e), Error);
  EXPECT_EQ(e.samples, 0) << "nothing was scored";
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

// A non-finite logit is named with the batch, the sample and where it
// starts, not scored as class 0 and averaged into a NaN loss.
TEST(Evaluate, ANonFiniteLogitIsANumericalErrorNamingWhereItStarts) {
  Context ctx = Context::cpu();
  const DataSplits data = open_data("synthetic:64", Shape{1, 28, 28}, 10);
  Graph graph = lenet(64);
  graph.compile(ctx);
  const Tensor& weight = graph.node("fc3").params[0];
  std::vector<float> values = to_vector<float>(ctx, weight);
  values[0] = std::numeric_limits<float>::infinity();
  from_vector<float>(ctx, values, weight);
  Loader loader(ctx, data.test,
                {.batch = 64, .workers = 1, .shuffle = false, .mode = SampleMode::kEvaluation, .drop_last = false});
  try {
    evaluate(ctx, graph, loader);
    FAIL() << "logits of inf and nan were scored";
  } catch (const NumericalError& e) {
    const std::string text = e.what();
    EXPECT_EQ(text.substr(0, 34), "evaluation batch 1: logit 0 of sam") << text;
    EXPECT_NE(text.find("first non-finite output: fc3 (Linear); non-finite parameters: fc3.weight"),
              std::string::npos)
        << text;
  }
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

// LeNet (untrained, its fixed initial weights) over a folder of 1x28x28
// images, in index order.
Evaluation evaluate_folder(const std::string& root, OnBadSample on_bad_sample, int batch, int workers) {
  Context ctx = Context::cpu();
  Graph graph = lenet(batch);
  graph.compile(ctx);
  auto data = std::make_shared<const ImageFolder>(
      root, ImageFolderOptions{.sample = Shape{1, 28, 28}, .on_bad_sample = on_bad_sample});
  Loader loader(ctx, data,
                {.batch = batch, .workers = workers, .shuffle = false, .mode = SampleMode::kEvaluation,
                 .drop_last = false});
  return evaluate(ctx, graph, loader);
}

// 10 readable JPEGs in clean/, the same 10 and a corrupt one among them in
// val/ (cat/2a.jpg sorts between cat/2.jpg and cat/3.jpg).
struct FolderWithACorruptImage {
  testing::TempDir dir;
  std::string clean = dir / "clean", val = dir / "val", corrupt = dir / "val/cat/2a.jpg";
  FolderWithACorruptImage() {
    testing::make_jpeg_folder(clean, {.classes = {"cat", "dog"}, .per_class = 5, .width = 200, .height = 150,
                                      .channels = 1});
    std::filesystem::copy(clean, val, std::filesystem::copy_options::recursive);
    const std::string good = testing::read_whole_file(val + "/cat/2.jpg");
    testing::write_file(corrupt, good.substr(0, good.size() * 3 / 4));  // cut short
  }
};

// The unreadable image is neither scored nor counted among the samples, and
// named: the rest score exactly as the folder without it does.
TEST(Evaluate, AnUnreadableImageIsCountedApartAndNamedNotScored) {
  const FolderWithACorruptImage folder;
  const Evaluation clean = evaluate_folder(folder.clean, OnBadSample::kSkip, 4, 2);
  ASSERT_EQ(clean.samples, 10);
  EXPECT_EQ(clean.unreadable, 0);
  for (const int batch : {4, 11}) {
    const Evaluation e = evaluate_folder(folder.val, OnBadSample::kSkip, batch, 3);
    EXPECT_EQ(e.samples, 10) << "batch " << batch;
    EXPECT_EQ(e.unreadable, 1);
    EXPECT_EQ(e.unreadable_files,
              (std::vector<std::string>{folder.corrupt + ": corrupt JPEG: Premature end of JPEG file"}));
    EXPECT_EQ(e.correct, clean.correct);
    EXPECT_NEAR(e.loss_sum, clean.loss_sum, 1e-4);
  }
}

// With OnBadSample::kStop the evaluation stops at the first unreadable image
// in the folder's order, whichever worker met which first, with a DataError
// (not a SampleError, which the loader would skip) naming it.
TEST(Evaluate, WithStopAnUnreadableImageIsADataErrorNamingTheFirst) {
  const FolderWithACorruptImage folder;
  testing::write_file(folder.val + "/dog/0a.jpg", "\x89PNG\r\n\x1a\n and the rest of a PNG");
  std::string message;
  try {
    evaluate_folder(folder.val, OnBadSample::kStop, 2, 4);
    ADD_FAILURE() << "the evaluation finished";
  } catch (const SampleError& e) {
    ADD_FAILURE() << "a SampleError, which the loader skips: " << e.what();
  } catch (const DataError& e) {
    message = e.what();
  }
  EXPECT_EQ(message, folder.corrupt + ": corrupt JPEG: Premature end of JPEG file (an unreadable image stops this "
                                      "run; --on-bad-sample skip leaves such images out, named and counted)");
}

}  // namespace
}  // namespace glassbox
