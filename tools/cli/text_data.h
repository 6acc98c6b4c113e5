// tools/cli/text_data.h: `glassbox train`'s data for a language model:
// `--data text:PATH` (a file, or a folder of fortune files) or `fortunes`
// (Debian's fortunes package, /usr/share/games/fortunes), made into the BPTT
// windows (data/bptt.h) of its three splits at the network's T and the batch.
#pragma once

#include <memory>
#include <string>

#include "data/batch_source.h"
#include "data/text_corpus.h"
#include "nets/registry.h"
#include "tensor/context.h"

namespace glassbox::cli {

struct TextData {
  std::shared_ptr<const TextCorpus> corpus;
  std::unique_ptr<BatchSource> train, validation, test;
};

// Where Debian's `fortunes` package puts its fortune files.
inline constexpr const char* kFortunesPath = "/usr/share/games/fortunes";

// Whether `spec` names text (a language model's data).
bool is_text_spec(const std::string& spec);

// Throws ConfigError if `spec` names text: `net` reads images.
void refuse_text_for_images(const std::string& spec, const NetSpec& net);

// The path a text spec names (text:PATH, or the fortunes' folder). Throws
// ConfigError for a spec that is not text, naming `net` where there is one,
// and for "text:" without a path.
std::string text_spec_path(const std::string& spec, const NetSpec* net);

// Opens `spec` for `net` (a language model) at `batch` streams: the windows
// of all three splits, or with `test_only` of the test split alone (eval
// scores nothing else, and a short valid split must not refuse it). Throws
// ConfigError for a spec that is not text, or a corpus whose vocabulary is
// not the network's output size; DataError for what the corpus cannot read.
TextData open_text_data(Context& ctx, const std::string& spec, const NetSpec& net, int batch, bool test_only = false);

}  // namespace glassbox::cli
