// data/bptt.cpp: batchify's transpose, and a window as two strided copies.
#include "data/bptt.h"

#include <algorithm>
#include <cstddef>

#include "data/shared.h"
#include "tensor/error.h"

namespace glassbox {

Batchified batchify(std::span<const int32_t> stream, int streams) {
  if (streams < 1) throw ConfigError(cat("batchify: the number of streams must be at least 1, got ", streams));
  Batchified out;
  out.streams = streams;
  const int64_t n = static_cast<int64_t>(stream.size());
  out.length = n / streams;
  out.dropped = n - out.length * streams;
  out.data.resize(static_cast<size_t>(out.length * streams));
  for (int b = 0; b < streams; ++b) {
    const int32_t* column = stream.data() + static_cast<size_t>(b) * static_cast<size_t>(out.length);
    for (int64_t t = 0; t < out.length; ++t) out.data[static_cast<size_t>(t * streams + b)] = column[t];
  }
  return out;
}

BpttWindows::BpttWindows(std::span<const int32_t> stream, BpttOptions options, std::string what)
    : options_(options), what_(std::move(what)) {
  if (options_.steps < 1) {
    throw ConfigError(cat(what_, ": BPTT windows need at least 1 time step, got ", options_.steps));
  }
  batches_ = batchify(stream, options_.streams);
  const int64_t needed = int64_t{options_.streams} * (int64_t{options_.steps} + 1);
  if (batches_.length < int64_t{options_.steps} + 1) {
    throw DataError(cat(what_, ": ", grouped(static_cast<int64_t>(stream.size())), " tokens are too few for ",
                        options_.streams, " streams and one window of ", options_.steps,
                        " steps: each stream needs ", options_.steps, " + 1 tokens (the targets are the next "
                        "token), ", grouped(needed), " in all"));
  }
  windows_ = (batches_.length - 1) / options_.steps;
}

int64_t BpttWindows::dropped_tail() const {
  return int64_t{options_.streams} * ((batches_.length - 1) - windows_ * options_.steps);
}

size_t BpttWindows::window_start(int64_t w) const {
  if (w < 0 || w >= windows_) {
    throw Error(cat(what_, ": window ", w, " is out of range [0, ", windows_, ")"));
  }
  return static_cast<size_t>(w) * window_size();
}

// Rows w*T ... w*T+T of the (L, B) matrix are contiguous: the inputs are the
// first T of them, the targets the T from one row on.
std::span<const int32_t> BpttWindows::inputs(int64_t w) const {
  return std::span<const int32_t>(batches_.data).subspan(window_start(w), window_size());
}

std::span<const int32_t> BpttWindows::targets(int64_t w) const {
  return std::span<const int32_t>(batches_.data).subspan(window_start(w) + static_cast<size_t>(options_.streams),
                                                         window_size());
}

void BpttWindows::window(int64_t w, std::span<int32_t> inputs, std::span<int32_t> targets) const {
  const std::span<const int32_t> from_inputs = this->inputs(w), from_targets = this->targets(w);
  if (inputs.size() != from_inputs.size() || targets.size() != from_targets.size()) {
    throw ShapeError(cat(what_, ": window() was given ", inputs.size(), " inputs and ", targets.size(),
                         " targets; a window of (T, B) = (", options_.steps, ", ", options_.streams, ") has ",
                         from_inputs.size(), " of each"));
  }
  std::copy(from_inputs.begin(), from_inputs.end(), inputs.begin());
  std::copy(from_targets.begin(), from_targets.end(), targets.begin());
}

std::string BpttWindows::describe() const {
  auto count = [](int64_t n, const char* one, const char* many) { return cat(grouped(n), n == 1 ? one : many); };
  return cat(what_, ": ", options_.streams, " streams of ", count(batches_.length, " token, ", " tokens, "),
             count(windows_, " window of ", " windows of "), options_.steps, " steps (",
             count(batches_.dropped, " token", " tokens"), " past the last full stream, ", grouped(dropped_tail()),
             " in a partial last window: dropped)");
}

}  // namespace glassbox
