// tools/cli/training_log.cpp
#include "tools/cli/training_log.h"

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

namespace glassbox::cli {

TrainingLog::TrainingLog(const std::string& path, int every_steps) : path_(path), every_steps_(every_steps) {
  file_ = std::fopen(path.c_str(), "a+");
  if (file_ == nullptr) throw Error(cat("--log ", path, ": cannot open for appending: ", std::strerror(errno)));
  // A run killed in the middle of a line leaves it unfinished: end it, so
  // that this run's first line stands on its own (readers report the broken one).
  const bool unfinished = std::fseek(file_, -1, SEEK_END) == 0 && std::fgetc(file_) != '\n';
  std::fseek(file_, 0, SEEK_END);  // between reading and writing, as C requires
  if (unfinished) write("");
}

TrainingLog::~TrainingLog() {
  if (file_ != nullptr) std::fclose(file_);
}

// One write of the whole line, then a flush: a reader never sees half a line
// unless the disk itself fails, which is reported.
void TrainingLog::write(const std::string& line) {
  const std::string text = line + "\n";
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) {
    throw Error(cat("--log ", path_, ": write failed: ", std::strerror(errno)));
  }
}

void TrainingLog::start(const std::map<std::string, std::string>& settings) {
  nlohmann::json line = {{"event", "start"}};
  for (const auto& [key, value] : settings) line[key] = value;
  write(line.dump());
}

void TrainingLog::step(const StepReport& s) {
  if (every_steps_ <= 0 || s.global_step % every_steps_ != 0) return;
  write(nlohmann::json{{"event", "step"},
                       {"epoch", s.epoch},
                       {"step", s.step},
                       {"global_step", s.global_step},
                       {"loss", s.loss},
                       {"lr", s.lr},
                       {"images_per_second", s.images_per_second}}
            .dump());
}

void TrainingLog::epoch(const EpochReport& e) {
  nlohmann::json line = {{"event", "epoch"},
                         {"epoch", e.epoch},
                         {"epochs", e.epochs},
                         {"global_step", e.global_step},
                         {"lr", e.lr},
                         {"train_loss", e.train_loss},
                         {"train_accuracy", e.train_accuracy},
                         {"seconds", e.seconds},
                         {"data_wait_seconds", e.data_wait_seconds},
                         {"compute_seconds", e.compute_seconds},
                         {"images_per_second", e.images_per_second},
                         {"skipped", e.skipped}};
  // A language model's evaluations score no accuracy: its perplexities instead.
  if (e.validation) {
    line["valid_loss"] = e.validation->loss();
    line["valid_perplexity"] = e.validation->perplexity();
    line["valid_seconds"] = e.validation->seconds;
  }
  if (e.test) {
    line["test_loss"] = e.test->loss();
    if (e.test->has_accuracy) {
      line["test_accuracy"] = e.test->accuracy();
    } else {
      line["test_perplexity"] = e.test->perplexity();
    }
    line["test_seconds"] = e.test->seconds;
  }
  if (!e.checkpoint.empty()) line["checkpoint"] = e.checkpoint;
  write(line.dump());
}

}  // namespace glassbox::cli
