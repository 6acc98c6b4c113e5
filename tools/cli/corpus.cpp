// tools/cli/corpus.cpp: `glassbox corpus text:PATH|fortunes`: a language
// model's text as Glassbox reads it (data/text_corpus.h): per split its
// entries, tokens, unknown words and the unigram baseline's perplexity, the
// number any language model must beat; with --out, the splits' token ids
// and the vocabulary as safetensors, so that the PyTorch peer
// (bench/peers/lstm_lm.py) trains on exactly the same ids.
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>

#include "data/text_corpus.h"
#include "tensor/atomic_file.h"
#include "tensor/parse.h"
#include "tensor/safetensors.h"
#include "tools/cli/args.h"
#include "tools/cli/commands.h"
#include "tools/cli/flag_specs.h"
#include "tools/cli/table.h"
#include "tools/cli/text_data.h"

namespace glassbox::cli {
namespace {

namespace fs = std::filesystem;

// --out must not be the corpus: the text file itself (which the ids would
// replace), or a file among a corpus folder's text files (a name without a
// '.', which the next read would take for text).
void refuse_output_in_corpus(const std::string& out, const std::string& corpus) {
  std::error_code text_error, target_error, error;
  const fs::path text = fs::weakly_canonical(corpus, text_error), target = fs::weakly_canonical(out, target_error);
  if (text_error || target_error) return;  // TextCorpus and check_writable name what is wrong
  const bool is_the_file = target == text;
  const bool in_the_folder = fs::is_directory(text, error) && target.parent_path() == text &&
                             target.filename().string().find('.') == std::string::npos;
  if (is_the_file || in_the_folder) {
    const char* what = is_the_file ? " is the corpus's own text file" : " would be a text file of the corpus folder";
    throw ConfigError(cat("corpus --out ", out, what, " (", corpus, "); give another file"));
  }
}

}  // namespace

int run_corpus(const std::vector<std::string>& words) {
  const Args args("corpus", corpus_flags(), words);
  if (args.positionals().size() != 1) {
    throw ConfigError(cat("corpus takes one text spec (got ", args.positionals().size(),
                          "): text:PATH (a text file, or a folder of fortune files) or fortunes"));
  }
  const std::string spec = args.positionals()[0];
  const std::string path = text_spec_path(spec, nullptr);
  const int vocabulary = args.int_in("--vocabulary", 10000, 3, 1 << 30);
  const std::string out = args.get("--out", "");
  // --out's file records the path and the words in its safetensors header,
  // JSON, which holds UTF-8 text only; a Linux path or a file's word is any
  // bytes (the tokenizer splits on ASCII space only).
  if (!out.empty()) {
    if (const size_t at = first_non_utf8(path); at != std::string::npos) {
      throw ConfigError(cat("corpus --out: the corpus path '", excerpt(path, 80), "' is not UTF-8 text from byte ", at,
                            " on; the file records it in its JSON header, which holds UTF-8 only: rename the path"));
    }
    refuse_output_in_corpus(out, path);
    check_writable(out);  // before the work
  }
  const TextCorpus corpus({.path = path, .vocabulary = vocabulary});
  for (int32_t id = 0; !out.empty() && id < corpus.vocabulary_size(); ++id) {
    if (first_non_utf8(corpus.word(id)) == std::string::npos) continue;
    throw DataError(cat("corpus --out ", out, ": the word '", excerpt(corpus.word(id), 80), "' (id ", id, ") of ", path,
                        " is not UTF-8 text, and the file records the vocabulary in its JSON header, which holds "
                        "UTF-8 only: convert the text to UTF-8 (without --out the corpus is still described)"));
  }

  std::printf("%s\n", corpus.describe().c_str());
  std::printf("%s files; vocabulary: the %s most frequent training words of %s, with <unk> and <eos>\n\n",
              grouped(corpus.files()).c_str(), grouped(corpus.vocabulary_size() - 2).c_str(),
              grouped(corpus.training_word_types()).c_str());
  Table table({{"split"}, {"entries", Table::Align::kRight}, {"tokens", Table::Align::kRight},
               {"<unk>", Table::Align::kRight}, {"unigram perplexity", Table::Align::kRight}});
  for (Split split : kSplits) {
    table.add_row({name_of(split), grouped(corpus.entries(split)), grouped(corpus.token_count(split)),
                   corpus.entries(split) == 0 ? "-" : fixed(100.0 * corpus.unknown_rate(split), 2) + "%",
                   corpus.entries(split) == 0 ? "-" : fixed(corpus.unigram_perplexity(split), 1)});
  }
  std::printf("%s\n", table.str().c_str());
  std::printf("unigram: each token's probability is its training count plus one over the training tokens plus the "
              "vocabulary (add-one); a language model must do better than this\n");
  if (!out.empty()) {
    SafetensorsFile file;
    // vocabulary_digest: what the peer's --save records, so that `glassbox
    // eval` can check a PyTorch model's vocabulary too (Note [A language
    // model's vocabulary], train/trainer.h).
    file.metadata = {{"format", "glassbox.corpus v1"}, {"path", path}, {"describe", corpus.describe()},
                     {"vocabulary_digest", corpus.vocabulary_digest()}};
    std::string words_text;
    for (int32_t id = 0; id < corpus.vocabulary_size(); ++id) words_text += corpus.word(id) + "\n";
    file.metadata["vocabulary"] = words_text;  // one word per line, line i is id i
    for (Split split : kSplits) {  // little-endian, as this machine is
      const std::span<const int32_t> ids = corpus.tokens(split);
      file.tensors.push_back(
          host_tensor(name_of(split), "I32", {static_cast<int64_t>(ids.size())}, ids.data(), ids.size_bytes()));
    }
    write_safetensors(out, file);
    std::printf("wrote %s: I32 train, valid, test (token ids) and the vocabulary (metadata, one word per line)\n",
                out.c_str());
  }
  return 0;
}

}  // namespace glassbox::cli
