// data/text_corpus.cpp: the files, then one tokenising pass that keeps every
// token as a view into its file's buffer and interns it, then the vocabulary
// and the id streams. The buffers live only while the corpus is built.
#include "data/text_corpus.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <system_error>
#include <unordered_map>

#include "data/shared.h"
#include "data/tokenize.h"
#include "tensor/error.h"

namespace glassbox {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void cannot_read(const std::string& path, const std::string& reason) {
  throw DataError(cat(path, ": cannot read: ", reason));
}

// A fortune file's name has no '.': "computers", not "computers.dat" (its
// index) or "computers.u8" (a link to it).
bool is_text_file_name(const std::string& name) { return name.find('.') == std::string::npos; }

// The files to read: `path` itself, or its text files sorted by name.
std::vector<std::string> text_files(const std::string& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (error || status.type() == fs::file_type::not_found) {
    cannot_read(path, error ? error.message() : "No such file or directory");
  }
  if (fs::is_regular_file(status)) return {path};
  if (!fs::is_directory(status)) {
    throw DataError(cat(path, ": is neither a regular file nor a directory: a text corpus is a text file, or a "
                        "directory of them"));
  }
  std::vector<std::string> names;
  fs::directory_iterator it(path, error);
  for (; !error && it != fs::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    // symlink_status: a link is not followed (fortune's ".u8" links name the same files again).
    if (is_text_file_name(name) && fs::is_regular_file(it->symlink_status(error))) names.push_back(name);
  }
  if (error) cannot_read(path, error.message());
  if (names.empty()) {
    throw DataError(cat(path, ": no text files in the directory (regular files whose name has no '.', not "
                        "symbolic links)"));
  }
  std::sort(names.begin(), names.end());
  std::vector<std::string> files;
  const std::string folder = path.back() == '/' ? path : path + "/";
  for (const std::string& name : names) files.push_back(folder + name);
  return files;
}

// "fortunes" for "/usr/share/games/fortunes/" as for "/usr/share/games/fortunes".
std::string last_component(const std::string& path) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  const std::string name = fs::path(trimmed).filename().string();
  return name.empty() ? trimmed : name;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * fraction);
  return text;
}

}  // namespace

const char* name_of(Split split) {
  switch (split) {
    case Split::kTrain: return "train";
    case Split::kValid: return "valid";
    case Split::kTest: return "test";
  }
  return "?";
}

Split split_of_entry(int64_t k) {
  const int64_t r = k % 20;
  return r == 18 ? Split::kValid : r == 19 ? Split::kTest : Split::kTrain;
}

TextCorpus::TextCorpus(TextCorpusOptions options) : options_(std::move(options)) {
  if (options_.vocabulary < 3) {
    throw ConfigError(cat("text corpus ", options_.path, ": a vocabulary of ", options_.vocabulary,
                          " words is too small: it needs at least 3 (\"<unk>\", \"<eos>\" and one word)"));
  }
  if (options_.name.empty()) options_.name = last_component(options_.path);
  build(text_files(options_.path));
}

void TextCorpus::build(const std::vector<std::string>& files) {
  files_ = static_cast<int64_t>(files.size());
  // Every token is a view into one of these buffers: the vector is sized once
  // and never grows, so no buffer moves (a short string's bytes live inside it).
  std::vector<std::string> contents(files.size());
  TextEntries entries;
  for (size_t f = 0; f < files.size(); ++f) {
    std::string reason;
    if (!read_file(files[f], contents[f], reason)) cannot_read(files[f], reason);
    normalise_text(contents[f], files[f]);
    split_entries(contents[f], entries);
  }
  if (entries.tokens.empty()) {
    throw DataError(cat(options_.path, ": no tokens in ", files.size(), files.size() == 1 ? " file" : " files",
                        ": the corpus is empty (only whitespace and \"%\" separator lines)"));
  }

  // Interned words: a provisional id per distinct word, in order of first
  // appearance; "<eos>" is -1. Counts are the training split's.
  constexpr int32_t kEos = -1;
  std::unordered_map<std::string_view, int32_t> interned;
  interned.reserve(1 << 16);
  std::vector<std::string_view> spelling;
  std::vector<int64_t> counts;
  std::vector<int32_t> provisional(entries.tokens.size());
  std::vector<Split> split_of_token(entries.tokens.size());
  size_t begin = 0;
  for (size_t k = 0; k < entries.ends.size(); ++k) {
    const Split split = split_of_entry(static_cast<int64_t>(k));
    ++entries_[index(split)];
    for (size_t t = begin; t < entries.ends[k]; ++t) {
      const std::string_view token = entries.tokens[t];
      int32_t id = kEos;
      if (token != kEndOfLineWord) {
        const auto [it, added] = interned.try_emplace(token, static_cast<int32_t>(spelling.size()));
        if (added) {
          spelling.push_back(token);
          counts.push_back(0);
        }
        id = it->second;
        if (split == Split::kTrain) ++counts[static_cast<size_t>(id)];
      }
      provisional[t] = id;
      split_of_token[t] = split;
    }
    begin = entries.ends[k];
  }

  // The vocabulary: training words by count, then by their bytes.
  std::vector<int32_t> order;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) order.push_back(static_cast<int32_t>(i));
  }
  training_word_types_ = static_cast<int64_t>(order.size());
  const size_t kept = std::min(order.size(), static_cast<size_t>(options_.vocabulary - 2));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kept), order.end(),
                    [&](int32_t a, int32_t b) {
                      const int64_t ca = counts[static_cast<size_t>(a)], cb = counts[static_cast<size_t>(b)];
                      return ca != cb ? ca > cb : spelling[static_cast<size_t>(a)] < spelling[static_cast<size_t>(b)];
                    });
  words_ = {std::string(kUnknownWord), std::string(kEndOfLineWord)};
  std::vector<int32_t> final_id(spelling.size(), kUnknown);
  for (size_t i = 0; i < kept; ++i) {
    final_id[static_cast<size_t>(order[i])] = static_cast<int32_t>(words_.size());
    words_.emplace_back(spelling[static_cast<size_t>(order[i])]);
  }
  for (size_t i = 0; i < words_.size(); ++i) ids_.emplace(words_[i], static_cast<int32_t>(i));

  for (std::vector<int32_t>& stream : streams_) stream.reserve(provisional.size());
  for (size_t t = 0; t < provisional.size(); ++t) {
    const int32_t id = provisional[t] == kEos ? kEndOfLine : final_id[static_cast<size_t>(provisional[t])];
    streams_[index(split_of_token[t])].push_back(id);
    if (id == kUnknown) ++unknown_[index(split_of_token[t])];
  }
  for (std::vector<int32_t>& stream : streams_) stream.shrink_to_fit();
  training_counts_.assign(words_.size(), 0);
  for (int32_t id : streams_[index(Split::kTrain)]) ++training_counts_[static_cast<size_t>(id)];
}

size_t TextCorpus::checked(int32_t id) const {
  if (id < 0 || id >= vocabulary_size()) {
    throw Error(cat(options_.name, ": word id ", id, " is outside the vocabulary [0, ", vocabulary_size(), ")"));
  }
  return static_cast<size_t>(id);
}

const std::string& TextCorpus::word(int32_t id) const { return words_[checked(id)]; }

int64_t TextCorpus::training_count(int32_t id) const { return training_counts_[checked(id)]; }

int32_t TextCorpus::id(std::string_view word) const {
  const auto it = ids_.find(word);
  return it == ids_.end() ? kUnknown : it->second;
}

double TextCorpus::unknown_rate(Split split) const {
  const int64_t n = token_count(split);
  return n == 0 ? 0.0 : static_cast<double>(unknown_count(split)) / static_cast<double>(n);
}

double TextCorpus::unigram_perplexity(Split split) const {
  const std::span<const int32_t> stream = tokens(split);
  if (stream.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double total = static_cast<double>(token_count(Split::kTrain) + vocabulary_size());
  std::vector<double> log_p(words_.size());
  for (size_t i = 0; i < log_p.size(); ++i) {
    log_p[i] = std::log((static_cast<double>(training_counts_[i]) + 1.0) / total);
  }
  double sum = 0.0;
  for (int32_t id : stream) sum += log_p[static_cast<size_t>(id)];
  return std::exp(-sum / static_cast<double>(stream.size()));
}

std::string TextCorpus::vocabulary_digest() const {
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a 64: offset basis, then per byte xor and multiply
  auto add = [&](unsigned char byte) {
    hash ^= byte;
    hash *= 0x100000001b3ULL;
  };
  for (const std::string& word : words_) {
    for (const char c : word) add(static_cast<unsigned char>(c));
    add('\n');  // words hold no line break: "ab" "c" is not "a" "bc"
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return cat(grouped(vocabulary_size()), vocabulary_size() == 1 ? " word" : " words", ", FNV-1a 64 ", hex);
}

std::string TextCorpus::describe() const {
  std::string vocabulary = cat("vocabulary ", grouped(vocabulary_size()));
  if (vocabulary_size() < options_.vocabulary) {
    vocabulary += cat(" (not the ", grouped(options_.vocabulary), " asked for: the training split has only ",
                      grouped(training_word_types_), training_word_types_ == 1 ? " distinct word" : " distinct words",
                      ")");
  }
  return cat(options_.name, ": ", grouped(token_count(Split::kTrain)), " train / ", grouped(token_count(Split::kValid)),
             " valid / ", grouped(token_count(Split::kTest)), " test tokens, ", vocabulary, " (<unk> ",
             percent(unknown_rate(Split::kTrain)), " of train) (", options_.path, ")");
}

}  // namespace glassbox
