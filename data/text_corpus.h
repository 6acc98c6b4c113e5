// data/text_corpus.h: a word-level text corpus for language modelling, read
// from plain text files (made for the `fortunes` Debian package's
// /usr/share/games/fortunes), split into train / valid / test token-id streams.
//
// The path is a directory (every regular file whose name has no '.', in
// byte order of the names; symbolic links are not followed, so fortune's
// ".u8" links and ".dat" indexes are skipped) or one text file. Each file is
// cut into entries and tokens by data/tokenize.h's rule (fortune's "%" lines,
// otherwise one entry per line; "<eos>" after every line that has tokens).
//
// Split: entry k (0, 1, 2, ... over the entries that have tokens, in file
// order, over the sorted files) goes to valid if k % 20 == 18, to test if
// k % 20 == 19, to train otherwise: 90 / 5 / 5 %, whole entries (a fortune
// is never cut in two), spread over every file.
//
// Vocabulary, from the training split only: id 0 "<unk>", id 1 "<eos>", then
// the V - 2 most frequent training words, by count (descending), ties by the
// word's bytes (ascending). Every other word, in any split, is "<unk>". When
// the training split has fewer distinct words than V - 2, the vocabulary is
// smaller than V: vocabulary_size() is its real size (the network's output
// size must be that), and describe() says so.
//
// Unigram baseline: p(id) = (train_count(id) + 1) / (train_tokens + size),
// counted over the training split's ids (so <unk> and <eos> are words too),
// add-one smoothed so that an id the training split never shows (<unk>, when
// every training word is in the vocabulary) does not make it infinite.
// perplexity(split) = exp(-mean over the split's ids of log p(id)). An LSTM
// that has learned more than word frequencies is below it. <unk> is one
// frequent word to every model here, so a split with more of it (valid and
// test hold words train never showed) can score lower than train does:
// compare models on one split and one vocabulary only.
//
// Batches for training: data/bptt.h, over tokens(split).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox {

enum class Split { kTrain = 0, kValid = 1, kTest = 2 };
inline constexpr Split kSplits[] = {Split::kTrain, Split::kValid, Split::kTest};
const char* name_of(Split split);  // "train", "valid", "test"
// The split of entry k, as above.
Split split_of_entry(int64_t k);

struct TextCorpusOptions {
  std::string path;         // a directory of text files, or one file
  int vocabulary = 10000;   // V: the most ids, "<unk>" and "<eos>" included; at least 3
  std::string name;         // for describe() and errors; empty: the path's last component ("fortunes")
};

class TextCorpus {
 public:
  static constexpr int32_t kUnknown = 0;    // "<unk>"
  static constexpr int32_t kEndOfLine = 1;  // "<eos>"

  // Reads, tokenises, splits and counts everything. Throws ConfigError for
  // V < 3, DataError naming the path (and file and byte offset where it
  // applies): missing or unreadable; neither a file nor a directory; a
  // directory with no text files; a NUL byte in a file; no tokens at all.
  explicit TextCorpus(TextCorpusOptions options);

  // "fortunes: 534,957 train / 29,802 valid / 30,240 test tokens, vocabulary
  // 10,000 (<unk> 5.2% of train) (/usr/share/games/fortunes)".
  std::string describe() const;
  const std::string& name() const { return options_.name; }
  const std::string& path() const { return options_.path; }

  // The real vocabulary size: V, or fewer (see above). Ids are [0, size).
  int vocabulary_size() const { return static_cast<int>(words_.size()); }
  // The vocabulary in one line, "10,000 words, FNV-1a 64 d3a1f0c2b4e59a17":
  // its size and a hash of its words in id order. Word ids mean the same
  // words exactly where two corpora give the same line; a language model's
  // checkpoint keeps it (TrainingState::vocabulary).
  std::string vocabulary_digest() const;
  int requested_vocabulary() const { return options_.vocabulary; }
  // Distinct words in the training split ("<eos>" not counted).
  int64_t training_word_types() const { return training_word_types_; }
  const std::string& word(int32_t id) const;  // Error for an id outside [0, vocabulary_size())
  int32_t id(std::string_view word) const;    // kUnknown for a word outside the vocabulary

  // Split `split` as one stream of ids, its entries one after another in
  // corpus order (nothing marks where an entry ends but its last "<eos>").
  std::span<const int32_t> tokens(Split split) const { return streams_[index(split)]; }
  int64_t token_count(Split split) const { return static_cast<int64_t>(streams_[index(split)].size()); }
  int64_t entries(Split split) const { return entries_[index(split)]; }
  int64_t files() const { return files_; }
  int64_t unknown_count(Split split) const { return unknown_[index(split)]; }
  double unknown_rate(Split split) const;  // unknown_count / token_count (0 for an empty split)
  int64_t training_count(int32_t id) const;  // the id's count in tokens(kTrain); Error as word()

  double unigram_perplexity(Split split) const;  // as above; NaN for an empty split

 private:
  static size_t index(Split split) { return static_cast<size_t>(split); }
  size_t checked(int32_t id) const;  // Error for an id outside the vocabulary
  void build(const std::vector<std::string>& files);

  TextCorpusOptions options_;
  int64_t files_ = 0;
  int64_t training_word_types_ = 0;
  std::vector<std::string> words_;                  // by id
  std::map<std::string, int32_t, std::less<>> ids_;
  std::vector<int64_t> training_counts_;            // by id
  std::vector<int32_t> streams_[3];
  int64_t entries_[3] = {0, 0, 0};
  int64_t unknown_[3] = {0, 0, 0};
};

}  // namespace glassbox
