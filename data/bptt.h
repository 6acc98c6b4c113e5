// data/bptt.h: a token-id stream as the batches of truncated backpropagation
// through time (BPTT), for a language model's (T, B) int32 inputs and targets
// (time-major, as the LSTM reads them).
//
// batchify: the stream of n ids cut into B streams of L = floor(n / B)
// consecutive ids each, laid out time-major: data[t * B + b] = stream[b * L + t].
// The last n - B * L ids are dropped (reported as dropped_remainder()).
//
// Windows: window w covers rows w*T ... w*T + T of that (L, B) matrix:
//   inputs[t, b]  = data[w*T + t,     b]      t in [0, T)
//   targets[t, b] = data[w*T + t + 1, b]      the next token of the same stream
// so consecutive windows continue each stream where the last one stopped (a
// recurrent network carries its state across them). windows() = floor((L-1)/T)
// full windows per epoch. The graph's shapes are static, so a partial last
// window is not made: the (L - 1) - windows()*T steps it would hold, over B
// streams, are dropped and reported (dropped_tail()).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace glassbox {

struct Batchified {
  std::vector<int32_t> data;   // (length, streams), time-major
  int64_t length = 0;          // L = floor(n / streams)
  int streams = 0;             // B
  int64_t dropped = 0;         // n - B * L: the ids past the last full column
};
// Throws ConfigError for streams < 1.
Batchified batchify(std::span<const int32_t> stream, int streams);

struct BpttOptions {
  int streams = 20;  // B: parallel streams, the batch
  int steps = 35;    // T: time steps per window
};

class BpttWindows {
 public:
  // Batchifies `stream` (one copy of it, time-major; nothing is copied per
  // window). `what` names the stream in messages: "fortunes valid". Throws
  // ConfigError for B or T < 1, DataError when the stream is too short for
  // one window: each of the B streams needs T + 1 ids.
  BpttWindows(std::span<const int32_t> stream, BpttOptions options, std::string what);

  int streams() const { return options_.streams; }
  int steps() const { return options_.steps; }
  int64_t windows() const { return windows_; }
  int64_t stream_length() const { return batches_.length; }
  int64_t dropped_remainder() const { return batches_.dropped; }
  int64_t dropped_tail() const;  // B * ((L - 1) - windows() * T)
  // The predictions one epoch makes: windows() * T * B.
  int64_t predictions() const { return windows_ * options_.steps * options_.streams; }
  const Batchified& batches() const { return batches_; }

  // Window `w` into `inputs` and `targets`, T * B ids each, time-major (T, B).
  // Throws Error for w outside [0, windows()), ShapeError for a span of
  // another size.
  void window(int64_t w, std::span<int32_t> inputs, std::span<int32_t> targets) const;
  // The same ids as views, without a copy: rows w*T ... w*T+T of the (L, B)
  // matrix are contiguous, so (T, B) inputs and targets are two overlapping
  // spans of it (valid while this object lives). Error for w out of range.
  std::span<const int32_t> inputs(int64_t w) const;
  std::span<const int32_t> targets(int64_t w) const;

  // "fortunes valid: 20 streams of 1,490 tokens, 42 windows of 35 steps (2
  // tokens past the last full stream, 380 in a partial last window: dropped)".
  std::string describe() const;

 private:
  size_t window_start(int64_t w) const;  // checks w
  size_t window_size() const { return static_cast<size_t>(options_.steps) * static_cast<size_t>(options_.streams); }

  BpttOptions options_;
  std::string what_;
  Batchified batches_;
  int64_t windows_ = 0;
};

}  // namespace glassbox
