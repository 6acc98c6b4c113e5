// data/text_batches.cpp
#include "data/text_batches.h"

#include <chrono>
#include <cstring>
#include <span>

#include "tensor/copy.h"
#include "tensor/error.h"

namespace glassbox {

TextBatches::TextBatches(Context& ctx, std::shared_ptr<const TextCorpus> corpus, Split split, BpttOptions options)
    : ctx_(ctx),
      corpus_(std::move(corpus)),
      windows_(corpus_->tokens(split), options, cat(corpus_->name(), " ", name_of(split))) {}

std::string TextBatches::describe() const { return windows_.describe(); }

void TextBatches::start_epoch(int) {
  next_window_ = 0;
  stats_ = {};
}

int64_t TextBatches::next(Graph& graph) {
  if (next_window_ == windows_.windows()) return 0;
  const Tensor& tokens = graph.input("tokens");
  const Tensor& labels = graph.input("labels");
  const Shape window{windows_.steps(), windows_.streams()};
  for (const Tensor* t : {&tokens, &labels}) {
    if (t->shape() != window || t->dtype() != DType::kInt32) {
      throw ConfigError(cat(describe(), ": the network's ", t == &tokens ? "tokens" : "labels", " are ", t->str(),
                            "; these windows are int32 ", window.str(), " (T, B)"));
    }
  }
  const auto start = std::chrono::steady_clock::now();
  const std::span<const int32_t> inputs = windows_.inputs(next_window_), targets = windows_.targets(next_window_);
  if (ctx_.is_cuda()) {
    // Note [A window's copy does not wait for the device]
    const size_t bytes = inputs.size_bytes();
    if (!staging_) staging_ = make_device_staging(ctx_, bytes, bytes, 2);
    const int slot = static_cast<int>(next_window_ % 2);
    staging_->wait_host(slot);
    std::memcpy(staging_->host_images(slot), inputs.data(), bytes);
    std::memcpy(staging_->host_labels(slot), targets.data(), bytes);
    staging_->copy_async(slot, tokens.raw(), labels.raw());
  } else {
    from_vector<int32_t>(ctx_, inputs, tokens);
    from_vector<int32_t>(ctx_, targets, labels);
  }
  ++next_window_;
  stats_.copy_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++stats_.batches;
  stats_.samples += window.numel();
  return window.numel();
}

}  // namespace glassbox
