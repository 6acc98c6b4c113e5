// tests/test_cli_text.cpp: a language model's text through the glassbox
// tool, as a user runs it: `glassbox corpus` and `glassbox train LSTMSmall
// --data text:PATH`, and every refusal that names what is wrong.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/safetensors.h"
#include "tests/support/command.h"
#include "tests/support/temp_dir.h"

namespace glassbox {
namespace {

using testing::contains;
using testing::contains_match;
using testing::first_match;
using testing::matches_whole;
using testing::run_command;

const std::string kCli = glassbox::testing::program_path(GLASSBOX_CLI_PATH);

testing::CommandOutcome glassbox(const std::string& arguments) { return run_command(kCli + " " + arguments); }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `lines` lines of ten words each from a vocabulary of `words` made-up words
// ("x0", "x1", ...; `letter` other than 'x' for other words), in a fixed
// pseudo-random order.
std::string made_up_text(int lines, int words, char letter = 'x') {
  std::string text;
  uint64_t state = 12345;
  for (int line = 0; line < lines; ++line) {
    for (int w = 0; w < 10; ++w) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      text += letter;
      text += std::to_string((state >> 33) % static_cast<uint64_t>(words));
      text += w == 9 ? '\n' : ' ';
    }
  }
  return text;
}

TEST(CliText, CorpusPrintsTheSplitsAndWritesTheIdsForThePeer) {
  testing::TempDir dir;
  std::ofstream(dir / "text.txt") << made_up_text(200, 100);
  const std::string out = dir / "ids.safetensors";
  const testing::CommandOutcome r = glassbox("corpus text:" + dir / "text.txt" + " --vocabulary 50 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* expected : {"text.txt: 1,980 train / 110 valid / 110 test tokens, vocabulary 50", "unigram perplexity",
                               "train      180", "wrote " }) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing '" << expected << "' in:\n" << r.output;
  }
  const SafetensorsFile file = read_safetensors(out);
  ASSERT_EQ(file.tensors.size(), 3u);
  const int64_t counts[] = {1980, 110, 110};
  const char* names[] = {"train", "valid", "test"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(file.tensors[i].name, names[i]);
    EXPECT_EQ(file.tensors[i].dtype, "I32");
    EXPECT_EQ(file.tensors[i].shape, std::vector<int64_t>{counts[i]});
  }
  std::istringstream vocabulary(file.metadata.at("vocabulary"));
  std::vector<std::string> words;
  for (std::string word; std::getline(vocabulary, word);) words.push_back(word);
  ASSERT_EQ(words.size(), 50u);
  EXPECT_EQ(words[0], "<unk>");
  EXPECT_EQ(words[1], "<eos>");
  EXPECT_TRUE(matches_whole(file.metadata.at("vocabulary_digest"), "50 words, FNV-1a 64 [0-9a-f]{16}"))
      << file.metadata.at("vocabulary_digest");

  // --out is never the corpus: its own text file, or a text file of its folder.
  const std::string text = dir / "text.txt";
  testing::CommandOutcome refused = glassbox("corpus text:" + text + " --out " + text);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_TRUE(contains(refused.output, "glassbox: corpus --out " + text + " is the corpus's own text file (" + text +
                                           "); give another file"))
      << refused.output;
  EXPECT_EQ(read_text(text), made_up_text(200, 100)) << "the text was written over";
  refused = glassbox("corpus text:" + dir.path() + " --out " + dir / "ids");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_TRUE(contains(refused.output, " would be a text file of the corpus folder")) << refused.output;
}

// A word that is not UTF-8 cannot go into --out's JSON header: the run says
// which word, with the data's exit code, and writes nothing; described
// without --out, the corpus is fine, and its splits without entries show no
// rates of nothing.
TEST(CliText, CorpusOutRefusesAWordThatIsNotUtf8AndShowsEmptySplitsAsNone) {
  testing::TempDir dir;
  std::ofstream(dir / "latin1.txt") << "caf\xe9 the cat\nthe dog\n";
  const std::string out = dir / "ids.safetensors";
  const testing::CommandOutcome refused = glassbox("corpus text:" + dir / "latin1.txt" + " --out " + out);
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_TRUE(contains(refused.output, "glassbox: corpus --out " + out + ": the word '")) << refused.output;
  EXPECT_TRUE(contains(refused.output, "is not UTF-8 text, and the file records the vocabulary in its JSON header"))
      << refused.output;
  EXPECT_FALSE(std::filesystem::exists(out));
  std::filesystem::create_directories(dir / "d\xff");
  std::ofstream(dir / "d\xff/one.txt") << made_up_text(200, 100);
  const testing::CommandOutcome odd_path = glassbox("corpus 'text:" + dir / "d\xff/one.txt" + "' --out " + out);
  EXPECT_EQ(odd_path.exit_code, 2) << odd_path.output;
  EXPECT_TRUE(contains(odd_path.output, "' is not UTF-8 text from byte ")) << odd_path.output;
  EXPECT_TRUE(contains(odd_path.output, "the file records it in its JSON header, which holds UTF-8 only: rename the "
                                        "path"))
      << odd_path.output;
  const testing::CommandOutcome described = glassbox("corpus text:" + dir / "latin1.txt");
  ASSERT_EQ(described.exit_code, 0) << described.output;
  EXPECT_FALSE(contains(described.output, "nan")) << described.output;
  EXPECT_TRUE(contains_match(described.output, "valid +0 +0 +- +-")) << described.output;
}

TEST(CliText, ALanguageModelTrainsOnTextAndReportsPerplexities) {
  testing::TempDir dir;
  std::ofstream(dir / "text.txt") << made_up_text(3000, 30000);  // about 17,800 distinct training words
  const std::string log = dir / "log.jsonl";
  const std::string run = dir / "run";
  const testing::CommandOutcome r = glassbox("train LSTMSmall --data text:" + dir / "text.txt" + " --device cpu " +
                                             "--epochs 1 --steps-per-epoch 2 --log " + log + " --checkpoint-dir " + run);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* expected : {"SGD: lr 1, constant schedule, momentum 0, weight decay 0, gradients clipped to norm 5",
                               "windows of 20 tokens x 20 streams", "epoch   train ppl   valid ppl    test ppl",
                               "tokens/s", "test perplexity after epoch 1: "}) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing '" << expected << "' in:\n" << r.output;
  }
  std::ifstream lines(log);
  std::string all((std::istreambuf_iterator<char>(lines)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(all, "\"valid_perplexity\"")) << all;
  EXPECT_TRUE(contains(all, "\"test_perplexity\"")) << all;
  // The checkpoint scores the same test split again, from a model file.
  const std::vector<std::string> trained = first_match(r.output, "test perplexity after epoch 1: ([0-9.]+)");
  ASSERT_FALSE(trained.empty()) << r.output;
  const testing::CommandOutcome e = glassbox("eval LSTMSmall --data text:" + dir / "text.txt" + " --device cpu " +
                                             "--weights " + run + "/epoch-0001.safetensors");
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_TRUE(contains(e.output, "perplexity: " + trained[1] + " (loss ")) << r.output << e.output;
  EXPECT_TRUE(contains(e.output, "the unigram baseline's: ")) << e.output;

  // eval scores the test split alone: a valid split too short for one window
  // of 20 streams (150 lines of one word) does not refuse it. The training
  // split, and so the vocabulary, is the same.
  std::istringstream all_lines(read_text(dir / "text.txt"));
  std::string short_valid;
  int index = 0;
  for (std::string line; std::getline(all_lines, line); ++index) {
    short_valid += (index % 20 == 18 ? "x1" : line) + "\n";
  }
  std::ofstream(dir / "short_valid.txt") << short_valid;
  const testing::CommandOutcome s = glassbox("eval LSTMSmall --data text:" + dir / "short_valid.txt" +
                                             " --device cpu --weights " + run + "/epoch-0001.safetensors");
  EXPECT_EQ(s.exit_code, 0) << s.output;
  EXPECT_TRUE(contains(s.output, "perplexity: ")) << s.output;

  // Note [A language model's vocabulary]: another corpus of as many words
  // gives its ids to other words. eval refuses it, and so does a resume
  // whose --data has changed since.
  std::ofstream(dir / "other.txt") << made_up_text(3000, 30000, 'y');
  const testing::CommandOutcome o = glassbox("eval LSTMSmall --data text:" + dir / "other.txt" + " --device cpu " +
                                             "--weights " + run + "/epoch-0001.safetensors");
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(contains_match(o.output,
                             "was trained on a vocabulary of 10,000 words, FNV-1a 64 [0-9a-f]{16}; other.txt has "
                             "10,000 words, FNV-1a 64 [0-9a-f]{16}: its word ids name other words"))
      << o.output;
  std::ofstream(dir / "text.txt") << made_up_text(3000, 30000, 'y');
  const testing::CommandOutcome resumed = glassbox("train LSTMSmall --resume " + run + " --epochs 2 --device cpu");
  EXPECT_EQ(resumed.exit_code, 2) << resumed.output;
  EXPECT_TRUE(contains(resumed.output, "the checkpoint's model was trained on a vocabulary of 10,000 words, "))
      << resumed.output;
  EXPECT_TRUE(contains(resumed.output, ": its word ids name other words (has the corpus changed?)")) << resumed.output;
}

TEST(CliText, SummaryAndTimeShowALanguageModelsLayers) {
  testing::CommandOutcome r = glassbox("summary LSTM");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* expected : {"encoder   Embedding", "10000 x 650", "650 -> 650, 2 layers, dropout 0.5, carried state",
                               "(35, 1, 10000)", "parameters: 19,780,400", "per sequence of 35 tokens"}) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing '" << expected << "' in:\n" << r.output;
  }
  r = glassbox("time LSTMSmall --batch 2 --steps 1 --warmup 0 --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* expected : {"rnn", "backward-data", "backward-weights", "decoder", " tokens/s, "}) {
    EXPECT_TRUE(contains(r.output, expected)) << "missing '" << expected << "' in:\n" << r.output;
  }
}

TEST(CliText, RefusalsNameTheNetworkAndTheData) {
  testing::TempDir dir;
  std::ofstream(dir / "small.txt") << made_up_text(200, 100);
  const struct {
    std::string args;
    std::string message;
    std::string env = "";
  } cases[] = {
      {"corpus", "glassbox: corpus takes one text spec (got 0): text:PATH (a text file, or a folder of fortune "
                 "files) or fortunes"},
      {"corpus LeNet", "glassbox: corpus reads text: text:PATH (a text file, or a folder of fortune files) or "
                       "fortunes (/usr/share/games/fortunes); got 'LeNet'"},
      {"train LSTMSmall", "glassbox: train needs --data SPEC: LSTMSmall is a language model: text:PATH or fortunes"},
      {"eval LSTMSmall --weights w --input x.safetensors --device cpu",
       "glassbox: LSTMSmall is a language model: eval scores it on a text's test split (--data text:PATH or "
       "fortunes); --input takes images"},
      {"eval LeNet --weights w --data fortunes --device cpu",
       "glassbox: --data fortunes is text, for a language model; LeNet reads images"},
      {"train LSTMSmall --data fashion-mnist --device cpu",
       "glassbox: LSTMSmall is a language model: it trains on text, --data text:PATH (a text file, or a folder of "
       "fortune files) or fortunes (/usr/share/games/fortunes); got 'fashion-mnist'"},
      {"train LSTMSmall --data text: --device cpu",
       "glassbox: --data text:PATH needs a path, e.g. text:/usr/share/games/fortunes"},
      {"corpus text:", "glassbox: corpus text:PATH needs a path, e.g. text:/usr/share/games/fortunes"},
      {"train LSTMSmall --data text:" + dir / "small.txt" + " --device cpu",
       "glassbox: LSTMSmall predicts 10,000 words, but small.txt: 1,980 train / 110 valid / 110 test tokens, "
       "vocabulary 102 (not the 10,000 asked for"},
      {"train LeNet --data text:" + dir / "small.txt" + " --device cpu",
       "glassbox: --data text:" + dir / "small.txt" + " is text, for a language model; LeNet reads images"},
      {"train LSTMSmall --data fortunes --on-bad-sample stop --device cpu",
       "glassbox: --on-bad-sample is for image data; LSTMSmall reads a text corpus, which has no samples to skip"},
      {"eval LSTMSmall --weights w --data fortunes --on-bad-sample skip --device cpu",
       "glassbox: --on-bad-sample is for image data; LSTMSmall reads a text corpus, which has no samples to skip"},
      {"train LSTMSmall --data fortunes --device cpu",
       "LSTMSmall is a language model, which trains in one process for now: its streams are not sharded "
       "over ranks (run without mpirun)",
       "OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=2 "},
  };
  for (const auto& c : cases) {
    const testing::CommandOutcome r = run_command(c.env + kCli + " " + c.args);
    EXPECT_NE(r.exit_code, 0) << "glassbox " << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << "glassbox " << c.args << " printed:\n" << r.output;
  }
}

}  // namespace
}  // namespace glassbox
