// tools/cli/training_log.h: `glassbox train --log FILE`: one JSON object per
// line, each appended with one write(2), so that a run that stops (or is
// killed) leaves every line before it whole, and a plot script
// (tools/plot_training.py) can read the file while the run goes on. A line
// the disk cannot take whole is cut off again: the file ends where it did.
//
//   {"event":"start","net":"LeNet","data":"fashion-mnist","batch":64,"device":"cpu",...}
//   {"event":"step","epoch":1,"step":100,"global_step":100,"loss":0.61,"lr":0.0499,"images_per_second":9811.2}
//   {"event":"epoch","epoch":1,"train_loss":0.60,"train_accuracy":0.78,"test_loss":0.45,"test_accuracy":0.83,
//    "seconds":6.1,"data_wait_seconds":0.1,"compute_seconds":5.9,"images_per_second":9822.0,"lr":0.0488,
//    "skipped":0,"test_unreadable":0,...}
// A language model's lines count tokens_per_second instead of
// images_per_second, and its epoch lines carry train_perplexity,
// valid_loss, valid_perplexity and test_perplexity instead of accuracies.
// Unreadable samples are left out of every number and counted apart:
// `skipped` in training (this rank's), `test_unreadable` and
// `valid_unreadable` in the evaluations.
#pragma once

#include <map>
#include <string>

#include "train/trainer.h"

namespace glassbox::cli {

// What TrainingLog's constructor refuses, found without making or changing
// anything, so that a run checks its --log before it claims its checkpoint
// directory (which --overwrite empties): ConfigError where `log` is not a
// regular file, not a log, or in `checkpoint_dir` under a name the run's
// checkpoints write (`latest`, an epoch's file, `.lock`: a save would
// replace it); Error where it cannot be written (a folder that is not there,
// unless it is the checkpoint directory the run makes).
void check_log_path(const std::string& log, const std::string& checkpoint_dir);

class TrainingLog {
 public:
  // Opens `path` for appending (a resumed run continues its log), ending a
  // last line that a killed run left unfinished. Throws ConfigError for a
  // path that is there but not a regular file (a named pipe, a device) or
  // not a log (its first bytes are not a log line's), and Error naming the
  // path and the system's reason if it cannot be opened.
  // `units`: what a rate counts, and a language model's perplexities.
  enum class Units { kImages, kTokens };
  TrainingLog(const std::string& path, int every_steps, Units units = Units::kImages);
  ~TrainingLog();
  TrainingLog(const TrainingLog&) = delete;
  TrainingLog& operator=(const TrainingLog&) = delete;

  void start(const std::map<std::string, std::string>& settings);
  void step(const StepReport& step);  // every `every_steps` steps (none if 0)
  void epoch(const EpochReport& epoch);

 private:
  void write(const std::string& line);

  const char* rate_key() const { return units_ == Units::kTokens ? "tokens_per_second" : "images_per_second"; }

  std::string path_;
  int fd_ = -1;
  int every_steps_ = 0;
  Units units_ = Units::kImages;
};

}  // namespace glassbox::cli
