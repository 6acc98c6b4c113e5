// tools/cli/text_data.cpp
#include "tools/cli/text_data.h"

#include "data/text_batches.h"
#include "tensor/error.h"
#include "tools/cli/table.h"

namespace glassbox::cli {

bool is_text_spec(const std::string& spec) { return spec == "fortunes" || spec.starts_with("text:"); }

void refuse_text_for_images(const std::string& spec, const NetSpec& net) {
  if (is_text_spec(spec)) {
    throw ConfigError(cat("--data ", spec, " is text, for a language model; ", net.name, " reads images"));
  }
}

std::string text_spec_path(const std::string& spec, const NetSpec* net) {
  if (!is_text_spec(spec)) {
    const std::string forms = cat("text:PATH (a text file, or a folder of fortune files) or fortunes (", kFortunesPath,
                                  "); got '", spec, "'");
    throw ConfigError(net != nullptr ? cat(net->name, " is a language model: it trains on text, --data ", forms)
                                     : cat("corpus reads text: ", forms));
  }
  const std::string path = spec == "fortunes" ? kFortunesPath : spec.substr(5);
  if (path.empty()) {
    throw ConfigError(cat(net != nullptr ? "--data" : "corpus", " text:PATH needs a path, e.g. text:", kFortunesPath));
  }
  return path;
}

TextData open_text_data(Context& ctx, const std::string& spec, const NetSpec& net, int batch, bool test_only) {
  const std::string path = text_spec_path(spec, &net);
  TextData data;
  data.corpus = std::make_shared<const TextCorpus>(TextCorpusOptions{.path = path, .vocabulary = net.classes});
  if (data.corpus->vocabulary_size() != net.classes) {
    throw ConfigError(cat(net.name, " predicts ", grouped(net.classes), " words, but ", data.corpus->describe(),
                          "; give it a larger corpus"));
  }
  const BpttOptions windows{.streams = batch, .steps = static_cast<int>(net.sample[0])};
  if (!test_only) {
    data.train = std::make_unique<TextBatches>(ctx, data.corpus, Split::kTrain, windows);
    data.validation = std::make_unique<TextBatches>(ctx, data.corpus, Split::kValid, windows);
  }
  data.test = std::make_unique<TextBatches>(ctx, data.corpus, Split::kTest, windows);
  return data;
}

}  // namespace glassbox::cli
