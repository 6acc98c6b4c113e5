// tests/fuzz/fuzz_text_corpus.cpp: a text corpus (data/text_corpus.h) made of
// the fuzzer's bytes, one file or a small directory, read by TextCorpus and
// checked against a model built from data/tokenize.h's steps; then the BPTT
// windows (data/bptt.h) of its train and valid splits.
//
// Input:
//   byte 0      bits 0-3: V = 3 + bits (3 to 18 words: small, so that words
//               fall outside the vocabulary); bit 4: the path is a directory
//               (else one file "one", the rest of the input); bit 5: the
//               directory's path ends in '/'
//   byte 1      BPTT: B = 1 + bits 0-2 streams, T = 1 + bits 3-5 steps
//   directory:  up to 5 entries, each
//     1 byte    bits 0-2, its kind: a text file "fN" (0, 1, 5, 6, 7); a file
//               "fN.u8" (2: a '.', not read); a symbolic link "lN" to "f0"
//               (3: not read, dangling or not); a folder "dN" holding the
//               bytes as a file (4: not read). N is the entry's place.
//     2 bytes   its length, little-endian
//     the bytes (a length past the end of the input takes what is left)
// Seeds: make_text_corpus_seeds.py.
//
// TextCorpus must refuse exactly these, each with a DataError: a directory
// with no text file, a NUL byte in a text file, no token in any text file.
// Everything else it must accept, and agree with the model, which cuts the
// same files with normalise_text and split_entries and does the rest itself:
// the entries of each split (split_of_entry), each split's ids token by token
// ("<eos>" 1, a vocabulary word its id, any other word 0), the vocabulary
// (the V - 2 most frequent training words, by count, then by bytes), every
// count. Perplexities are finite and in [1, train tokens + vocabulary]. No
// token a line makes is "<eos>" or "<unk>", and each is non-empty, without
// spaces or capitals; a file that is UTF-8 gives only UTF-8 tokens. BPTT: a
// DataError exactly when a stream is shorter than T + 1 ids; otherwise the
// window count, the drops and every window's inputs and targets are
// data/bptt.h's formulas, and a window's copy is its views.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "data/bptt.h"
#include "data/text_corpus.h"
#include "data/tokenize.h"
#include "tensor/parse.h"
#include "tests/fuzz/fuzz_files.h"
#include "tests/fuzz/fuzz_input.h"

using namespace glassbox;

namespace {

namespace fs = std::filesystem;

constexpr int kMaxEntries = 5;
constexpr int64_t kMaxWindowsChecked = 16;

struct Input {
  int vocabulary = 3;
  bool directory = false;
  bool trailing_slash = false;
  BpttOptions bptt;
  std::string path;                 // what TextCorpus is given
  std::string name;                 // the corpus's name, its path's last component
  std::vector<std::string> texts;   // the text files' bytes, in name order
};

[[noreturn]] void harness_failed(const std::string& what, const std::error_code& error) {
  std::fprintf(stderr, "fuzz: %s: %s\n", what.c_str(), error.message().c_str());
  std::abort();
}

// Writes the input's file or directory under `root` (emptied first).
Input write_input(const std::string& root, std::string_view input) {
  Input in;
  auto take_byte = [&] {
    const auto byte = static_cast<uint8_t>(input.empty() ? 0 : input[0]);
    input.remove_prefix(input.empty() ? 0 : 1);
    return byte;
  };
  const uint8_t flags = take_byte(), bptt = take_byte();
  in.vocabulary = 3 + (flags & 15);
  in.directory = (flags & 16) != 0;
  in.trailing_slash = in.directory && (flags & 32) != 0;
  in.bptt = {.streams = 1 + (bptt & 7), .steps = 1 + ((bptt >> 3) & 7)};

  std::error_code error;
  fs::remove_all(root, error);
  fs::create_directories(root, error);
  if (error) harness_failed("cannot make " + root, error);
  if (!in.directory) {
    in.path = root + "/one";
    in.name = "one";
    fuzz::write_bytes(in.path, input);
    in.texts.emplace_back(input);
    return in;
  }
  const std::string folder = root + "/corpus";
  fs::create_directory(folder, error);
  if (error) harness_failed("cannot make " + folder, error);
  in.path = in.trailing_slash ? folder + "/" : folder;
  in.name = "corpus";
  std::map<std::string, std::string> texts;  // by name: the listing's order
  for (int i = 0; i < kMaxEntries && input.size() >= 3; ++i) {
    const int kind = static_cast<uint8_t>(input[0]) & 7;
    const size_t length = static_cast<uint8_t>(input[1]) | static_cast<size_t>(static_cast<uint8_t>(input[2])) << 8;
    input.remove_prefix(3);
    const std::string_view bytes = input.substr(0, length);
    input.remove_prefix(bytes.size());
    const std::string n = std::to_string(i);
    switch (kind) {
      case 2:
        fuzz::write_bytes(folder + "/f" + n + ".u8", bytes);
        break;
      case 3:
        fs::create_symlink("f0", folder + "/l" + n, error);
        if (error) harness_failed("cannot link " + folder + "/l" + n, error);
        break;
      case 4:
        fs::create_directory(folder + "/d" + n, error);
        if (error) harness_failed("cannot make " + folder + "/d" + n, error);
        fuzz::write_bytes(folder + "/d" + n + "/f", bytes);
        break;
      default:
        fuzz::write_bytes(folder + "/f" + n, bytes);
        texts["f" + n] = std::string(bytes);
    }
  }
  for (auto& [name, bytes] : texts) in.texts.push_back(std::move(bytes));
  return in;
}

// Each token the text itself makes (tokenize_line's, before any "<eos>" is
// added): a non-empty run of bytes with no space, control byte or capital
// letter, and never "<eos>" or "<unk>".
void check_line_tokens(std::string_view normalised) {
  std::vector<std::string_view> tokens;
  for (size_t start = 0; start <= normalised.size();) {
    const size_t end = std::min(normalised.find('\n', start), normalised.size());
    tokens.clear();
    tokenize_line(normalised.substr(start, end - start), tokens);
    for (const std::string_view token : tokens) {
      FUZZ_CHECK(!token.empty() && token != kEndOfLineWord && token != kUnknownWord);
      for (const char c : token) {
        const auto byte = static_cast<unsigned char>(c);
        FUZZ_CHECK(byte > ' ' && byte != 0x7f && !(byte >= 'A' && byte <= 'Z'));
      }
    }
    start = end + 1;
  }
}

// What TextCorpus must hold, from the same cut into entries.
struct Model {
  std::vector<std::string> buffers;  // the normalised texts; the tokens point into them
  TextEntries entries;
  std::vector<std::string_view> split_tokens[3];
  int64_t split_entries[3] = {0, 0, 0};
  std::vector<std::string> vocabulary;  // ids 2, 3, ...
  int64_t training_word_types = 0;
};

Model model_of(const Input& in) {
  Model m;
  m.buffers = in.texts;  // sized once: no buffer moves after its tokens are cut
  for (std::string& text : m.buffers) {
    const bool utf8 = first_non_utf8(text) == std::string_view::npos;
    const size_t before = m.entries.tokens.size();
    normalise_text(text, "fuzz");
    check_line_tokens(text);
    split_entries(text, m.entries);
    for (size_t t = before; utf8 && t < m.entries.tokens.size(); ++t) {
      FUZZ_CHECK(first_non_utf8(m.entries.tokens[t]) == std::string_view::npos);  // a UTF-8 file gives UTF-8 words
    }
  }
  size_t begin = 0;
  std::map<std::string_view, int64_t> counts;
  for (size_t k = 0; k < m.entries.ends.size(); ++k) {
    const auto split = static_cast<size_t>(split_of_entry(static_cast<int64_t>(k)));
    ++m.split_entries[split];
    FUZZ_CHECK(m.entries.ends[k] > begin);  // an entry without tokens is left out
    FUZZ_CHECK(m.entries.tokens[m.entries.ends[k] - 1] == kEndOfLineWord);
    for (size_t t = begin; t < m.entries.ends[k]; ++t) {
      const std::string_view token = m.entries.tokens[t];
      m.split_tokens[split].push_back(token);
      if (split == static_cast<size_t>(Split::kTrain) && token != kEndOfLineWord) ++counts[token];
    }
    begin = m.entries.ends[k];
  }
  FUZZ_CHECK(begin == m.entries.tokens.size());
  std::vector<std::pair<int64_t, std::string_view>> ranked;
  for (const auto& [word, count] : counts) ranked.emplace_back(-count, word);
  std::sort(ranked.begin(), ranked.end());
  m.training_word_types = static_cast<int64_t>(ranked.size());
  for (size_t i = 0; i < ranked.size() && i + 2 < static_cast<size_t>(in.vocabulary); ++i) {
    m.vocabulary.emplace_back(ranked[i].second);
  }
  return m;
}

void check_corpus(const TextCorpus& corpus, const Input& in, const Model& m) {
  FUZZ_CHECK(corpus.name() == in.name && corpus.path() == in.path);
  FUZZ_CHECK(corpus.files() == static_cast<int64_t>(in.texts.size()));
  FUZZ_CHECK(corpus.requested_vocabulary() == in.vocabulary);
  FUZZ_CHECK(corpus.training_word_types() == m.training_word_types);
  FUZZ_CHECK(corpus.vocabulary_size() == 2 + static_cast<int>(m.vocabulary.size()));
  FUZZ_CHECK(corpus.vocabulary_size() <= in.vocabulary);
  FUZZ_CHECK(corpus.word(TextCorpus::kUnknown) == kUnknownWord);
  FUZZ_CHECK(corpus.word(TextCorpus::kEndOfLine) == kEndOfLineWord);
  for (size_t i = 0; i < m.vocabulary.size(); ++i) {
    FUZZ_CHECK(corpus.word(static_cast<int32_t>(i + 2)) == m.vocabulary[i]);
  }
  for (int32_t id = 0; id < corpus.vocabulary_size(); ++id) FUZZ_CHECK(corpus.id(corpus.word(id)) == id);
  bool refused = false;
  try {
    (void)corpus.word(corpus.vocabulary_size());
  } catch (const Error&) {
    refused = true;
  }
  FUZZ_CHECK(refused);

  std::vector<int64_t> training_counts(static_cast<size_t>(corpus.vocabulary_size()), 0);
  for (const Split split : kSplits) {
    const auto s = static_cast<size_t>(split);
    const std::span<const int32_t> ids = corpus.tokens(split);
    FUZZ_CHECK(corpus.entries(split) == m.split_entries[s]);
    FUZZ_CHECK(ids.size() == m.split_tokens[s].size() && corpus.token_count(split) == static_cast<int64_t>(ids.size()));
    int64_t unknown = 0;
    for (size_t t = 0; t < ids.size(); ++t) {
      const std::string_view token = m.split_tokens[s][t];
      const auto found = std::find(m.vocabulary.begin(), m.vocabulary.end(), token);
      const int32_t expected = token == kEndOfLineWord        ? TextCorpus::kEndOfLine
                               : found != m.vocabulary.end() ? static_cast<int32_t>(found - m.vocabulary.begin()) + 2
                                                              : TextCorpus::kUnknown;
      FUZZ_CHECK(ids[t] == expected);
      unknown += expected == TextCorpus::kUnknown ? 1 : 0;
      if (split == Split::kTrain) ++training_counts[static_cast<size_t>(expected)];
    }
    FUZZ_CHECK(corpus.unknown_count(split) == unknown);
    const double perplexity = corpus.unigram_perplexity(split);
    if (ids.empty()) {
      FUZZ_CHECK(std::isnan(perplexity) && corpus.unknown_rate(split) == 0.0);
    } else {
      const double most = static_cast<double>(corpus.token_count(Split::kTrain) + corpus.vocabulary_size());
      FUZZ_CHECK(std::isfinite(perplexity) && perplexity >= 1.0 - 1e-9 && perplexity <= most * (1.0 + 1e-9));
    }
  }
  for (int32_t id = 0; id < corpus.vocabulary_size(); ++id) {
    FUZZ_CHECK(corpus.training_count(id) == training_counts[static_cast<size_t>(id)]);
    if (id >= 2) FUZZ_CHECK(corpus.training_count(id) >= 1);  // a vocabulary word is a training word
  }
  FUZZ_CHECK(corpus.describe().starts_with(in.name + ": "));
}

// The windows of one split, against data/bptt.h's formulas.
void check_windows(const TextCorpus& corpus, Split split, BpttOptions options) {
  const std::span<const int32_t> stream = corpus.tokens(split);
  const int64_t n = static_cast<int64_t>(stream.size()), B = options.streams, T = options.steps;
  const int64_t L = n / B;
  bool too_short = false;
  try {
    const BpttWindows windows(stream, options, "fuzz");
    FUZZ_CHECK(L >= T + 1);
    FUZZ_CHECK(windows.stream_length() == L && windows.windows() == (L - 1) / T);
    FUZZ_CHECK(windows.dropped_remainder() == n - B * L);
    FUZZ_CHECK(windows.dropped_tail() == B * ((L - 1) - windows.windows() * T));
    FUZZ_CHECK(windows.predictions() == windows.windows() * T * B);
    std::vector<int32_t> inputs(static_cast<size_t>(T * B)), targets(inputs.size());
    for (int64_t w = 0; w < std::min(windows.windows(), kMaxWindowsChecked); ++w) {
      const std::span<const int32_t> in = windows.inputs(w), out = windows.targets(w);
      FUZZ_CHECK(in.size() == inputs.size() && out.size() == targets.size());
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t b = 0; b < B; ++b) {
          const auto i = static_cast<size_t>(t * B + b);
          FUZZ_CHECK(in[i] == stream[static_cast<size_t>(b * L + w * T + t)]);
          FUZZ_CHECK(out[i] == stream[static_cast<size_t>(b * L + w * T + t + 1)]);
        }
      }
      windows.window(w, inputs, targets);
      FUZZ_CHECK(std::equal(in.begin(), in.end(), inputs.begin()));
      FUZZ_CHECK(std::equal(out.begin(), out.end(), targets.begin()));
    }
    bool refused = false;
    try {
      (void)windows.inputs(windows.windows());
    } catch (const Error&) {
      refused = true;
    }
    FUZZ_CHECK(refused);
    refused = false;
    try {
      windows.window(0, std::span<int32_t>(inputs).first(inputs.size() - 1), targets);
    } catch (const ShapeError&) {
      refused = true;
    }
    FUZZ_CHECK(refused);
    FUZZ_CHECK(windows.describe().starts_with("fuzz: "));
  } catch (const DataError&) {
    too_short = true;
  }
  FUZZ_CHECK(too_short == (L < T + 1));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fuzz::TempDir temp("text");
  const Input in = write_input(temp / "root", {reinterpret_cast<const char*>(data), size});

  const bool has_nul = std::any_of(in.texts.begin(), in.texts.end(),
                                   [](const std::string& text) { return text.find('\0') != std::string::npos; });
  Model model;
  if (!has_nul) model = model_of(in);
  const bool refuse = in.texts.empty() || has_nul || model.entries.tokens.empty();

  try {
    const TextCorpus corpus({.path = in.path, .vocabulary = in.vocabulary, .name = ""});
    FUZZ_CHECK(!refuse);
    check_corpus(corpus, in, model);
    check_windows(corpus, Split::kTrain, in.bptt);
    check_windows(corpus, Split::kValid, in.bptt);
  } catch (const DataError& e) {
    if (!refuse) {
      std::fprintf(stderr, "fuzz: TextCorpus refused a readable corpus: %s\n", e.what());
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: TextCorpus: not a DataError: %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}
