// tests/test_language_model.cpp: the LSTM language models (nets/lstm_lm.cpp):
// their sizes against the paper's arithmetic, a small one learning a text
// through the trainer (data/text_batches.h, truncated BPTT with carried
// state), and the carried state reset by the graph.
#include <gtest/gtest.h>

#include <fstream>

#include "data/text_batches.h"
#include "nets/nets.h"
#include "nets/registry.h"
#include "train/trainer.h"
#include "tensor/copy.h"
#include "tests/support/devices.h"
#include "tests/support/temp_dir.h"

namespace glassbox {
namespace {

// Per layer l, 4H(I_l + H) weights and 8H biases; the embedding V x H; the
// decoder H x V plus V. MACs per token: the LSTM's 4H(I + H) per layer and
// the decoder's H x V (the embedding is a gather).
struct Size {
  const char* net;
  int64_t hidden, steps, params, macs_per_sequence;
};
constexpr Size kSizes[] = {
    // medium: 6.5M + 2 x 3,385,200 + 6.51M; (2 x 4 x 650 x 1300 + 650 x 10000) x 35
    {"LSTM", 650, 35, 19'780'400, 464'100'000},
    // large: 15M + 2 x 18,012,000 + 15.01M; (2 x 4 x 1500 x 3000 + 1500 x 10000) x 35
    {"LSTMLarge", 1500, 35, 66'034'000, 1'785'000'000},
    // small: 2M + 2 x 321,600 + 2.01M; (2 x 4 x 200 x 400 + 200 x 10000) x 20
    {"LSTMSmall", 200, 20, 4'653'200, 52'800'000},
};

TEST(LanguageModel, SizesAreThePapersAndShapesAreTimeMajor) {
  for (const Size& s : kSizes) {
    const NetSpec net = find_net(s.net);
    EXPECT_TRUE(net.language_model) << s.net;
    EXPECT_EQ(net.items_per_sample(), s.steps) << s.net;
    EXPECT_EQ(net.item_name(), "tokens");
    const Graph graph = net.build(3);
    EXPECT_EQ(graph.parameter_count(), s.params) << s.net;
    EXPECT_EQ(graph.macs(), 3 * s.macs_per_sequence) << s.net;
    EXPECT_EQ(graph.batch(), 3) << s.net << ": the batch of (T, B) tokens is B";
    EXPECT_EQ(graph.node("tokens").shape, (Shape{s.steps, 3}));
    EXPECT_EQ(graph.node("labels").shape, (Shape{s.steps, 3}));
    EXPECT_EQ(graph.node("decoder").shape, (Shape{s.steps, 3, 10000}));
    EXPECT_EQ(graph.node("rnn").shape, (Shape{s.steps, 3, s.hidden}));
  }
  EXPECT_FALSE(find_net("VGG16").language_model);
  EXPECT_EQ(find_net("VGG16").item_name(), "images");
}

// A text whose next word is always determined: "w0 w1 ... w9", one cycle a
// line, shifted by one word each line. A unigram model cannot do better than
// about 11 (ten words and <eos>, near-uniform); an LSTM that learns the cycle gets close to 1.
std::string cyclic_text(int lines) {
  std::string text;
  for (int line = 0; line < lines; ++line) {
    for (int w = 0; w < 10; ++w) {
      text += 'w';
      text += static_cast<char>('0' + (line + w) % 10);
      text += w == 9 ? '\n' : ' ';
    }
  }
  return text;
}

TEST(LanguageModel, ASmallLstmLearnsATextThroughTheTrainer) {
  testing::TempDir dir;
  std::ofstream(dir / "cycle.txt") << cyclic_text(600);  // one entry per line: 540 train, 30 valid, 30 test
  auto corpus = std::make_shared<const TextCorpus>(TextCorpusOptions{.path = dir / "cycle.txt", .vocabulary = 100});
  ASSERT_EQ(corpus->vocabulary_size(), 12) << corpus->describe();
  const LstmLmConfig config{.vocabulary = 12, .hidden = 16, .layers = 1, .steps = 8, .dropout = 0.0f};
  const int batch = 4;
  const NetSpec net{"Cycle", "", Shape{config.steps}, config.vocabulary, batch, batch,
                    [config](int b) { return lstm_language_model(config, b); }, /*language_model=*/true};
  Context ctx = Context::cpu();
  Graph graph = net.build(batch);
  graph.compile(ctx);
  const BpttOptions windows{.streams = batch, .steps = config.steps};
  Trainer trainer(ctx, net, graph, std::make_unique<TextBatches>(ctx, corpus, Split::kTrain, windows),
                  std::make_unique<TextBatches>(ctx, corpus, Split::kValid, windows),
                  std::make_unique<TextBatches>(ctx, corpus, Split::kTest, windows),
                  {.epochs = 4, .sgd = {.lr = 1.0f, .momentum = 0.0f, .weight_decay = 0.0f, .max_grad_norm = 5.0f}});
  std::vector<EpochReport> epochs;
  trainer.run({.on_epoch = [&](const EpochReport& e) { epochs.push_back(e); }});
  ASSERT_EQ(epochs.size(), 4u);
  const double unigram = corpus->unigram_perplexity(Split::kTest);
  EXPECT_GT(unigram, 10.0);
  ASSERT_TRUE(epochs.back().test && epochs.back().validation);
  EXPECT_FALSE(epochs.back().test->has_accuracy);
  EXPECT_EQ(epochs.back().test->samples, TextBatches(ctx, corpus, Split::kTest, windows).batches_per_epoch() *
                                             config.steps * batch) << "every token of every whole window, once";
  EXPECT_LT(epochs.back().test->perplexity(), unigram / 3) << "unigram " << unigram;
  std::printf("cycle: unigram test perplexity %.2f; the LSTM's after each epoch:", unigram);
  for (const EpochReport& e : epochs) std::printf(" %.3f", e.test->perplexity());
  std::printf("\n");
  EXPECT_LT(epochs.back().validation->perplexity(), unigram / 3);
  EXPECT_LT(epochs.back().train_loss, epochs.front().train_loss);
}

// Each window reaches the graph's inputs as the windows hold it, window
// after window, and a new epoch starts again at the first. On a GPU the
// windows go through two pinned slots used in turn (Note [A window's copy
// does not wait for the device]): each window's inputs are copied aside on
// the stream as it comes, and read only after every window was queued, so
// that a slot written again before its copy ran would show.
class TextBatchesTest : public testing::DeviceTest {};

TEST_P(TextBatchesTest, EveryWindowReachesTheInputsInOrder) {
  testing::TempDir dir;
  std::ofstream(dir / "cycle.txt") << cyclic_text(200);
  auto corpus = std::make_shared<const TextCorpus>(TextCorpusOptions{.path = dir / "cycle.txt", .vocabulary = 100});
  Graph graph = lstm_language_model({.vocabulary = 12, .hidden = 4, .layers = 1, .steps = 5, .dropout = 0.0f}, 3);
  graph.compile(ctx());
  TextBatches batches(ctx(), corpus, Split::kTrain, {.streams = 3, .steps = 5});
  const int64_t windows = batches.batches_per_epoch();
  ASSERT_GE(windows, 4);
  for (int epoch = 1; epoch <= 2; ++epoch) {
    batches.start_epoch(epoch);
    std::vector<Tensor> tokens, labels;
    for (int64_t w = 0; w < windows; ++w) {
      ASSERT_EQ(batches.next(graph), 15);
      tokens.push_back(ctx().allocate(Shape{5, 3}, DType::kInt32, MemoryCategory::kData));
      labels.push_back(ctx().allocate(Shape{5, 3}, DType::kInt32, MemoryCategory::kData));
      copy(ctx(), graph.input("tokens"), tokens.back());
      copy(ctx(), graph.input("labels"), labels.back());
    }
    EXPECT_EQ(batches.next(graph), 0) << "past the last window";
    for (int64_t w = 0; w < windows; ++w) {
      const std::span<const int32_t> inputs = batches.windows().inputs(w), targets = batches.windows().targets(w);
      const auto at = static_cast<size_t>(w);
      EXPECT_EQ(to_vector<int32_t>(ctx(), tokens[at]), std::vector<int32_t>(inputs.begin(), inputs.end()))
          << "window " << w;
      EXPECT_EQ(to_vector<int32_t>(ctx(), labels[at]), std::vector<int32_t>(targets.begin(), targets.end()))
          << "window " << w;
    }
  }
}

GLASSBOX_INSTANTIATE_ON_DEVICES(TextBatchesTest);

// Truncated BPTT: each window starts where the last stopped, until the
// carried state is reset; then the first window's output comes back exactly.
TEST(LanguageModel, CarriedStateFlowsAcrossWindowsUntilReset) {
  const LstmLmConfig config{.vocabulary = 7, .hidden = 5, .layers = 2, .steps = 3, .dropout = 0.0f};
  Context ctx = Context::cpu();
  Graph graph = lstm_language_model(config, 2);
  graph.compile(ctx, {.memory_reuse = MemoryReuse::kOff});
  from_vector<int>(ctx, std::vector<int>{1, 2, 3, 4, 5, 6}, graph.input("tokens"));
  from_vector<int>(ctx, std::vector<int>{2, 3, 4, 5, 6, 0}, graph.input("labels"));
  graph.forward(ctx, Phase::kInference);
  const std::vector<float> first = to_vector<float>(ctx, graph.node("decoder").value);
  graph.forward(ctx, Phase::kInference);
  EXPECT_NE(to_vector<float>(ctx, graph.node("decoder").value), first) << "the second window starts from the first's state";
  graph.reset_carried_state(ctx);
  graph.forward(ctx, Phase::kInference);
  EXPECT_EQ(to_vector<float>(ctx, graph.node("decoder").value), first) << "reset: zeros again";
}

TEST(LanguageModel, WindowsThatDoNotFitTheNetworkAreRefusedByName) {
  testing::TempDir dir;
  std::ofstream(dir / "cycle.txt") << cyclic_text(100);
  auto corpus = std::make_shared<const TextCorpus>(TextCorpusOptions{.path = dir / "cycle.txt", .vocabulary = 100});
  Context ctx = Context::cpu();
  Graph graph = lstm_language_model({.vocabulary = 12, .hidden = 4, .layers = 1, .steps = 5, .dropout = 0.0f}, 2);
  graph.compile(ctx);
  TextBatches batches(ctx, corpus, Split::kTrain, {.streams = 3, .steps = 5});
  try {
    batches.next(graph);
    FAIL() << "(5, 3) windows went into a (5, 2) network";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).substr(std::string(e.what()).find(": the network's")),
              ": the network's tokens are int32 (5, 2) on cpu; these windows are int32 (5, 3) (T, B)");
  }
}

}  // namespace
}  // namespace glassbox
