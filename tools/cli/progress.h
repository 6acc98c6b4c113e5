// tools/cli/progress.h: what `glassbox train` prints while it runs.
//
// On a terminal, one line redrawn in place (at most ten times a second):
//   epoch 3/10  412/937 [#########.........]  loss 0.3412  lr 0.0421  9,870 img/s  ETA 0:05
// When stdout is not a terminal (a log file, a pipe, CI), a plain line at
// every tenth of the epoch instead, so logs carry no control characters.
// After each epoch, one row of a table whose header is printed first:
//   epoch  train loss  train acc  test loss  test acc  time (s)   data wait      compute  images/s        lr
//    3/10      0.3412     87.65%     0.3301    88.10%      6.10   0.12   2%   5.83  96%     9,822  0.042100
// A row whose epoch skipped unreadable images ends with their counts per
// split, "  (unreadable, skipped: 2 train, 1 test)"; the files are named on
// stderr the first time each is skipped.
// A language model's rows are perplexities (exp of the mean loss per token)
// and tokens/s:
//   epoch   train ppl   valid ppl    test ppl  time (s)   data wait      compute  tokens/s        lr
#pragma once

#include <chrono>
#include <cstdio>

#include "train/trainer.h"

namespace glassbox::cli {

class Progress {
 public:
  enum class Units { kImages, kTokens };
  // `terminal`: redraw one line in place (output_is_terminal), else plain
  // lines. kTokens: a language model's table. `ranks`: the processes of a
  // data-parallel job, each reporting its own steps: the rate shown is the
  // job's (this rank's times `ranks`, the ranks taking equal batches in
  // lockstep), with the rate per rank beside it.
  Progress(std::FILE* out, bool terminal, Units units = Units::kImages, int ranks = 1);

  void header();                      // the epoch table's header
  void step(const StepReport& step);  // the bar, or a plain line now and then
  void epoch(const EpochReport& epoch);

 private:
  void flush_checked();  // throws Error where out_ can no longer be written

  std::FILE* out_;
  bool terminal_;
  Units units_;
  int ranks_;
  bool bar_shown_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

// "1:02:03" or "2:03" for a duration in seconds.
std::string clock_time(double seconds);

}  // namespace glassbox::cli
