// tests/test_text_corpus.cpp: the word-level text corpus (data/tokenize.h,
// data/text_corpus.h, data/bptt.h) on small files written here, where every
// token, id and perplexity can be worked out by hand; every error's message;
// and the real /usr/share/games/fortunes when the `fortunes` package is there.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "data/bptt.h"
#include "data/text_corpus.h"
#include "data/tokenize.h"
#include "tensor/error.h"
#include "tests/support/data_files.h"

namespace glassbox {
namespace {

using testing::contains;
using testing::message_of;
using testing::TempDir;
using testing::write_file;
using Tokens = std::vector<std::string>;

const std::string kFortunes = "/usr/share/games/fortunes";

TEST(Tokenize, LowercasesAndSplitsPunctuationOffWords) {
  EXPECT_EQ(tokenize("Hello, World!\n"), (Tokens{"hello", ",", "world", "!", "<eos>"}));
  EXPECT_EQ(tokenize("The Sun-2 has 575MB;"), (Tokens{"the", "sun", "-", "2", "has", "575mb", ";", "<eos>"}));
  // An apostrophe between word bytes joins them; elsewhere it is punctuation.
  EXPECT_EQ(tokenize("Don't 'quote' rock'n'roll o' '"),
            (Tokens{"don't", "'", "quote", "'", "rock'n'roll", "o", "'", "'", "<eos>"}));
  // A run of one punctuation byte is one token; different bytes are not.
  EXPECT_EQ(tokenize("Wait... -- what?! ----"), (Tokens{"wait", "...", "--", "what", "?", "!", "----", "<eos>"}));
  // Text cannot make the special tokens: '<' and '>' are punctuation.
  EXPECT_EQ(tokenize("<eos> <unk>"), (Tokens{"<", "eos", ">", "<", "unk", ">", "<eos>"}));
}

TEST(Tokenize, KeepsUtf8InsideWordsAndResolvesOverstrikes) {
  // UTF-8 bytes (>= 0x80) are word bytes, kept as they are (not lowercased).
  EXPECT_EQ(tokenize("Caf\xc3\xa9 \xc3\x9c" "BER"), (Tokens{"caf\xc3\xa9", "\xc3\x9c" "ber", "<eos>"}));
  // A backspace erases the character before it on its line, as fortune files underline and accent.
  EXPECT_EQ(tokenize("_\bn and Ren'\be, ____\b\b\b\bdoes"), (Tokens{"n", "and", "rene", ",", "does", "<eos>"}));
  EXPECT_EQ(tokenize("a\n\bb"), (Tokens{"a", "<eos>", "b", "<eos>"}));  // not the line break
  EXPECT_EQ(tokenize("\b\bx"), (Tokens{"x", "<eos>"}));
  // A backspace erases a whole UTF-8 character, as a terminal backs up one
  // column; a byte that is not part of a whole sequence is a character alone.
  EXPECT_EQ(tokenize("caf\xc3\xa9\be"), (Tokens{"cafe", "<eos>"}));
  EXPECT_EQ(tokenize("\xe2\x82\xac\bx \xf0\x9f\x98\x80\by"), (Tokens{"x", "y", "<eos>"}));
  EXPECT_EQ(tokenize("a\xa9\bb \xe2\x82\bc"), (Tokens{"ab", "\xe2" "c", "<eos>"}));
  // Other control bytes are whitespace; lines without tokens get no <eos>.
  EXPECT_EQ(tokenize("a\tb\x07" "c\r\n\n   \n d\x7f" "e\n"), (Tokens{"a", "b", "c", "<eos>", "d", "e", "<eos>"}));
}

TEST(Tokenize, EntriesAreSeparatedByPercentLinesOrAreLines) {
  TextEntries fortune;
  // "%  " (trailing spaces) separates; "50%" and "%%" do not; empty entries do not count.
  split_entries("a b\nc\n%\n%\nd 50%\n%  \n%%\n", fortune);
  EXPECT_EQ(fortune.ends, (std::vector<size_t>{5, 9, 11}));
  EXPECT_EQ(fortune.tokens[7], "%");
  TextEntries plain;  // no separator line: one entry per line with tokens
  split_entries("x y\n\nz", plain);
  EXPECT_EQ(plain.ends, (std::vector<size_t>{3, 5}));
  EXPECT_EQ((Tokens{plain.tokens.begin(), plain.tokens.end()}), (Tokens{"x", "y", "<eos>", "z", "<eos>"}));
}

TEST(TextCorpus, SplitRuleIsEntryNumberModuloTwenty) {
  for (int64_t k = 0; k < 60; ++k) {
    const Split expected = k % 20 == 18 ? Split::kValid : k % 20 == 19 ? Split::kTest : Split::kTrain;
    EXPECT_EQ(split_of_entry(k), expected) << k;
  }
  EXPECT_STREQ(name_of(Split::kValid), "valid");
}

TEST(TextCorpus, ReadsSortedTextFilesOnlyAndNumbersEntriesAcrossThem) {
  TempDir dir;
  std::string a, b;
  for (int i = 0; i < 10; ++i) a += cat("a", i, "\n%\n");
  for (int i = 0; i < 8; ++i) b += cat("b", i, "\n%\n");
  b += "a3 a3\n%\na4 A4 a4\n";  // entries 18 (valid) and 19 (test)
  write_file(dir / "b", b);
  write_file(dir / "a", a);
  write_file(dir / "a.dat", "not text \x01\x02");
  write_file(dir / "sub/c", "in a subdirectory: not read\n");
  std::filesystem::create_symlink(dir / "a", dir / "c");  // a link: not followed

  const TextCorpus corpus({.path = dir.path(), .vocabulary = 100, .name = "tiny"});
  EXPECT_EQ(corpus.files(), 2);
  EXPECT_EQ(corpus.entries(Split::kTrain), 18);
  EXPECT_EQ(corpus.entries(Split::kValid), 1);
  EXPECT_EQ(corpus.entries(Split::kTest), 1);
  const int32_t a3 = corpus.id("a3"), a4 = corpus.id("a4"), eos = TextCorpus::kEndOfLine;
  EXPECT_EQ(corpus.word(a3), "a3");
  EXPECT_EQ((std::vector<int32_t>(corpus.tokens(Split::kValid).begin(), corpus.tokens(Split::kValid).end())),
            (std::vector<int32_t>{a3, a3, eos}));
  EXPECT_EQ((std::vector<int32_t>(corpus.tokens(Split::kTest).begin(), corpus.tokens(Split::kTest).end())),
            (std::vector<int32_t>{a4, a4, a4, eos}));
  // Train is a0 .. a9, then b0 .. b7, each with its <eos>, in that order.
  const std::span<const int32_t> train = corpus.tokens(Split::kTrain);
  ASSERT_EQ(train.size(), 36u);
  EXPECT_EQ(corpus.word(train[0]), "a0");
  EXPECT_EQ(corpus.word(train[20]), "b0");
  EXPECT_EQ(corpus.word(train[34]), "b7");

  // One file given directly reads the same way; the default name is the path's last part.
  const TextCorpus one({.path = dir / "b", .vocabulary = 100});
  EXPECT_EQ(one.files(), 1);
  EXPECT_EQ(one.entries(Split::kTrain), 10);
  EXPECT_EQ(one.name(), "b");
  EXPECT_EQ(TextCorpus({.path = dir.path() + "/"}).name(), std::filesystem::path(dir.path()).filename().string());
}

// 20 entries: 0 is the interesting one, 1 .. 17 are ".", 18 is valid, 19 test.
// Training counts: "." 17, "the" 3, "bat" 2, "cat" 2, "ant" 1, "zebra" 1, <eos> 19.
void write_tiny_corpus(const std::string& file) {
  std::string text = "The cat the bat\nthe cat bat ant zebra\n";
  for (int i = 1; i < 18; ++i) text += "%\n.\n";
  text += "%\ndog dog dog dog dog cat\n%\nunicorn the\n";
  write_file(file, text);
}

TEST(TextCorpus, VocabularyComesFromTrainingCountsWithTiesByWord) {
  TempDir dir;
  write_tiny_corpus(dir / "tiny");
  const TextCorpus corpus({.path = dir / "tiny", .vocabulary = 6});
  ASSERT_EQ(corpus.vocabulary_size(), 6);
  // "bat" and "cat" tie at 2: by their bytes. "ant" and "zebra" do not fit.
  const Tokens words = {"<unk>", "<eos>", ".", "the", "bat", "cat"};
  for (int32_t id = 0; id < 6; ++id) EXPECT_EQ(corpus.word(id), words[static_cast<size_t>(id)]) << id;
  EXPECT_EQ(corpus.id("zebra"), TextCorpus::kUnknown);
  EXPECT_EQ(corpus.training_word_types(), 6);
  // "dog" is 5 times in valid, but only the training split makes the vocabulary.
  EXPECT_EQ(corpus.id("dog"), TextCorpus::kUnknown);
  const std::vector<int32_t> valid(corpus.tokens(Split::kValid).begin(), corpus.tokens(Split::kValid).end());
  EXPECT_EQ(valid, (std::vector<int32_t>{0, 0, 0, 0, 0, 5, 1}));
  const std::vector<int32_t> test(corpus.tokens(Split::kTest).begin(), corpus.tokens(Split::kTest).end());
  EXPECT_EQ(test, (std::vector<int32_t>{0, 3, 1}));  // "unicorn" is only in test: <unk>
  EXPECT_EQ(corpus.token_count(Split::kTrain), 45);
  EXPECT_EQ(corpus.unknown_count(Split::kTrain), 2);
  EXPECT_EQ(corpus.unknown_count(Split::kValid), 5);
  EXPECT_EQ(corpus.training_count(TextCorpus::kEndOfLine), 19);
  EXPECT_EQ(corpus.training_count(corpus.id(".")), 17);
  EXPECT_DOUBLE_EQ(corpus.unknown_rate(Split::kTrain), 2.0 / 45.0);
  EXPECT_EQ(corpus.describe(), cat("tiny: 45 train / 7 valid / 3 test tokens, vocabulary 6 (<unk> 4.4% of train) (",
                                   dir / "tiny", ")"));

  // Asked for more than there is: the vocabulary is all 6 words and the 2 markers, and says so.
  const TextCorpus wide({.path = dir / "tiny", .vocabulary = 10000});
  EXPECT_EQ(wide.vocabulary_size(), 8);
  EXPECT_EQ(wide.requested_vocabulary(), 10000);
  EXPECT_EQ(wide.word(6), "ant");
  EXPECT_EQ(wide.word(7), "zebra");
  EXPECT_TRUE(contains(wide.describe(), "vocabulary 8 (not the 10,000 asked for: the training split has only 6 "
                                        "distinct words) (<unk> 0.0% of train)"))
      << wide.describe();
}

// The digest a language model's checkpoint keeps: the same for the same
// words in the same order, another for another vocabulary. FNV-1a 64 of
// "<unk>\n<eos>\n.\nthe\nbat\ncat\n", computed apart from the library.
TEST(TextCorpus, TheVocabularyDigestNamesItsWords) {
  TempDir dir;
  write_tiny_corpus(dir / "tiny");
  const TextCorpus corpus({.path = dir / "tiny", .vocabulary = 6});
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : std::string("<unk>\n<eos>\n.\nthe\nbat\ncat\n")) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  EXPECT_EQ(corpus.vocabulary_digest(), std::string("6 words, FNV-1a 64 ") + hex);
  EXPECT_EQ(TextCorpus({.path = dir / "tiny", .vocabulary = 6}).vocabulary_digest(), corpus.vocabulary_digest());
  EXPECT_NE(TextCorpus({.path = dir / "tiny", .vocabulary = 7}).vocabulary_digest(), corpus.vocabulary_digest());
}

TEST(TextCorpus, UnigramPerplexityIsAddOneSmoothedTrainingFrequency) {
  TempDir dir;
  write_tiny_corpus(dir / "tiny");
  const TextCorpus corpus({.path = dir / "tiny", .vocabulary = 6});
  // Counts <unk> 2, <eos> 19, "." 17, the 3, bat 2, cat 2: 45 tokens, V = 6,
  // p(id) = (count + 1) / 51. Test is <unk> the <eos>: p = 3/51, 4/51, 20/51.
  EXPECT_NEAR(corpus.unigram_perplexity(Split::kTest), 51.0 / std::cbrt(240.0), 1e-9);
  // Valid: five <unk>, cat, <eos>.
  const double valid = std::exp(-(5 * std::log(3.0 / 51) + std::log(3.0 / 51) + std::log(20.0 / 51)) / 7);
  EXPECT_NEAR(corpus.unigram_perplexity(Split::kValid), valid, 1e-9);
  // On train it is at most V (the uniform model's perplexity) and above 1.
  EXPECT_GT(corpus.unigram_perplexity(Split::kTrain), 1.0);
  EXPECT_LT(corpus.unigram_perplexity(Split::kTrain), 6.0);
}

std::vector<int32_t> iota(int n) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = i;
  return ids;
}

TEST(Bptt, BatchifyIsTimeMajorAndDropsTheRemainder) {
  const Batchified b = batchify(iota(11), 3);
  EXPECT_EQ(b.length, 3);
  EXPECT_EQ(b.streams, 3);
  EXPECT_EQ(b.dropped, 2);
  EXPECT_EQ(b.data, (std::vector<int32_t>{0, 3, 6, 1, 4, 7, 2, 5, 8}));  // stream b is b*3, b*3+1, b*3+2
}

TEST(Bptt, WindowsAreConsecutiveAndTargetsAreTheNextToken) {
  // 23 ids, B = 2: streams 0..10 and 11..21 (22 dropped); T = 3: 3 windows, 1 step left.
  const BpttWindows windows(iota(23), {.streams = 2, .steps = 3}, "tiny train");
  EXPECT_EQ(windows.stream_length(), 11);
  EXPECT_EQ(windows.windows(), 3);
  EXPECT_EQ(windows.dropped_remainder(), 1);
  EXPECT_EQ(windows.dropped_tail(), 2);
  EXPECT_EQ(windows.predictions(), 18);
  std::vector<int32_t> inputs(6, -7), targets(6, -7);
  windows.window(1, inputs, targets);
  EXPECT_EQ(inputs, (std::vector<int32_t>{3, 14, 4, 15, 5, 16}));   // (T, B): rows t, columns b
  EXPECT_EQ(targets, (std::vector<int32_t>{4, 15, 5, 16, 6, 17}));
  windows.window(2, inputs, targets);
  EXPECT_EQ(inputs, (std::vector<int32_t>{6, 17, 7, 18, 8, 19}));
  EXPECT_EQ(targets, (std::vector<int32_t>{7, 18, 8, 19, 9, 20}));
  EXPECT_EQ(std::vector<int32_t>(windows.inputs(2).begin(), windows.inputs(2).end()), inputs);
  EXPECT_EQ(std::vector<int32_t>(windows.targets(2).begin(), windows.targets(2).end()), targets);
  EXPECT_EQ(windows.describe(), "tiny train: 2 streams of 11 tokens, 3 windows of 3 steps (1 token past the last "
                                "full stream, 2 in a partial last window: dropped)");
  // Exactly B * (T + 1) ids make one window.
  EXPECT_EQ(BpttWindows(iota(8), {.streams = 2, .steps = 3}, "x").windows(), 1);
}

TEST(Bptt, BadArgumentsAndTooShortStreamsAreNamedErrors) {
  EXPECT_EQ(message_of<ConfigError>([] { batchify(iota(4), 0); }),
            "batchify: the number of streams must be at least 1, got 0");
  EXPECT_EQ(message_of<ConfigError>([] { BpttWindows(iota(40), {.streams = 2, .steps = 0}, "tiny valid"); }),
            "tiny valid: BPTT windows need at least 1 time step, got 0");
  EXPECT_EQ(message_of<DataError>([] { BpttWindows(iota(1099), {.streams = 20, .steps = 54}, "tiny valid"); }),
            "tiny valid: 1,099 tokens are too few for 20 streams and one window of 54 steps: each stream needs "
            "54 + 1 tokens (the targets are the next token), 1,100 in all");
  EXPECT_EQ(BpttWindows(iota(1100), {.streams = 20, .steps = 54}, "v").windows(), 1);
  const BpttWindows windows(iota(23), {.streams = 2, .steps = 3}, "tiny train");
  std::vector<int32_t> six(6), five(5);
  EXPECT_EQ(message_of<Error>([&] { windows.window(3, six, six); }), "tiny train: window 3 is out of range [0, 3)");
  EXPECT_EQ(message_of<Error>([&] { windows.inputs(-1); }), "tiny train: window -1 is out of range [0, 3)");
  EXPECT_EQ(message_of<ShapeError>([&] { windows.window(0, six, five); }),
            "tiny train: window() was given 6 inputs and 5 targets; a window of (T, B) = (3, 2) has 6 of each");
}

TEST(TextCorpus, EveryBadPathOrFileIsADataErrorNamingIt) {
  TempDir dir;
  const std::string missing = dir / "missing";
  EXPECT_EQ(message_of<DataError>([&] { TextCorpus({.path = missing}); }),
            missing + ": cannot read: No such file or directory");
  EXPECT_TRUE(contains(message_of<DataError>([] { TextCorpus({.path = "/dev/null"}); }),
                       "/dev/null: is neither a regular file nor a directory"));

  const std::string empty = dir / "empty";
  write_file(empty + "/words.dat", "a file with a '.' in its name is not read\n");
  write_file(empty + "/sub/words", "nor is a subdirectory\n");
  std::filesystem::create_symlink(empty + "/words.dat", empty + "/link");
  EXPECT_EQ(message_of<DataError>([&] { TextCorpus({.path = empty}); }),
            empty + ": no text files in the directory (regular files whose name has no '.', not symbolic links)");

  const std::string blank = dir / "blank";
  write_file(blank + "/a", "%\n  \t\n%\n\n");
  write_file(blank + "/b", "");
  EXPECT_EQ(message_of<DataError>([&] { TextCorpus({.path = blank}); }),
            blank + ": no tokens in 2 files: the corpus is empty (only whitespace and \"%\" separator lines)");

  const std::string binary = dir / "binary";
  write_file(binary + "/a", "fine\n");
  write_file(binary + "/b", std::string(1234, 'x') + "\n\b" + std::string(1, '\0') + "y");
  EXPECT_TRUE(contains(message_of<DataError>([&] { TextCorpus({.path = binary}); }),
                       binary + "/b: byte 1,236 is a NUL byte: not a text file"));  // the offset as read

  write_file(dir / "ok", "fine\n");
  EXPECT_EQ(message_of<ConfigError>([&] { TextCorpus({.path = dir / "ok", .vocabulary = 2}); }),
            "text corpus " + (dir / "ok") +
                ": a vocabulary of 2 words is too small: it needs at least 3 (\"<unk>\", \"<eos>\" and one word)");
  const TextCorpus corpus({.path = dir / "ok", .vocabulary = 3});
  EXPECT_EQ(message_of<Error>([&] { corpus.word(3); }), "ok: word id 3 is outside the vocabulary [0, 3)");
  EXPECT_EQ(message_of<Error>([&] { corpus.training_count(-1); }), "ok: word id -1 is outside the vocabulary [0, 3)");
}

TEST(TextCorpus, ReadsDebiansFortunes) {
  if (!std::filesystem::is_directory(kFortunes)) {
    GTEST_SKIP() << "Debian's fortunes package is not installed (" << kFortunes << ")";
  }
  const auto start = std::chrono::steady_clock::now();
  const TextCorpus corpus({.path = kFortunes});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << corpus.describe() << "\n  loaded in " << seconds << " s; " << corpus.files() << " files, entries "
            << corpus.entries(Split::kTrain) << " / " << corpus.entries(Split::kValid) << " / "
            << corpus.entries(Split::kTest) << ", training word types " << corpus.training_word_types() << "\n  ";
  for (int32_t id = 0; id < 24; ++id) std::cout << corpus.word(id) << " " << corpus.training_count(id) << "  ";
  std::cout << "\n";
  for (Split split : kSplits) {
    std::cout << "  " << name_of(split) << ": " << corpus.token_count(split) << " tokens, <unk> "
              << 100.0 * corpus.unknown_rate(split) << "%, unigram perplexity " << corpus.unigram_perplexity(split)
              << "\n";
  }
  EXPECT_EQ(corpus.name(), "fortunes");
  EXPECT_GT(corpus.files(), 20);
  EXPECT_GT(corpus.token_count(Split::kTrain), 300000);
  EXPECT_GT(corpus.token_count(Split::kValid), 15000);
  EXPECT_GT(corpus.token_count(Split::kTest), 15000);
  EXPECT_EQ(corpus.vocabulary_size(), 10000);
  EXPECT_EQ(corpus.word(TextCorpus::kEndOfLine), "<eos>");
  EXPECT_EQ(corpus.word(2), ".");  // the most frequent token of prose
  EXPECT_GT(corpus.unknown_rate(Split::kTrain), 0.01);
  EXPECT_LT(corpus.unknown_rate(Split::kTrain), 0.15);
  EXPECT_GT(corpus.unknown_rate(Split::kTest), corpus.unknown_rate(Split::kTrain));  // words train never showed
  const double perplexity = corpus.unigram_perplexity(Split::kTest);
  EXPECT_GT(perplexity, 100.0);
  EXPECT_LT(perplexity, 2000.0);
  const BpttWindows valid(corpus.tokens(Split::kValid), {.streams = 10, .steps = 35}, "fortunes valid");
  std::cout << "  " << valid.describe() << "\n";
  EXPECT_GT(valid.windows(), 40);
}

}  // namespace
}  // namespace glassbox
