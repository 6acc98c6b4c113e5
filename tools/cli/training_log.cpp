// tools/cli/training_log.cpp
#include "tools/cli/training_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tensor/atomic_file.h"
#include "tensor/parse.h"
#include "train/checkpoint.h"

namespace glassbox::cli {
namespace {

// What a path that is not a regular file is, for the refusal.
const char* what_it_is(mode_t mode) {
  return S_ISDIR(mode)    ? "a directory"
         : S_ISFIFO(mode) ? "a named pipe"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : "not a file";
}

[[noreturn]] void refuse_not_regular(const std::string& path, mode_t mode) {
  throw ConfigError(cat("--log ", path, " is ", what_it_is(mode),
                        ", not a regular file: the log is a file that lines are appended to"));
}

[[noreturn]] void cannot_open(const std::string& path, int error) {
  throw Error(cat("--log ", path, ": cannot open for appending: ", std::strerror(error)));
}

// A log's every line begins {" (one JSON object of named values); a file
// that begins otherwise is some other file (a checkpoint, `latest`, data),
// which the appended lines would damage. A run killed after the first byte
// leaves "{": a log too. Closes `fd` before it throws.
void refuse_if_not_a_log(int fd, const std::string& path, off_t size) {
  char first[2] = {};
  const size_t want = static_cast<size_t>(std::min<off_t>(size, 2));
  if (want > 0 && (::pread(fd, first, want, 0) != static_cast<ssize_t>(want) ||
                   std::string_view(first, want) != std::string_view("{\"", want))) {
    ::close(fd);
    throw ConfigError(cat("--log ", path, " holds something other than a training log (a log's lines begin {\"): "
                          "lines appended to it would damage it; give a new file, or the log of the run resumed"));
  }
}

// `path` made absolute, then canonical as far as it exists.
std::filesystem::path resolved(const std::filesystem::path& path, std::error_code& error) {
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  return error ? std::filesystem::path() : std::filesystem::weakly_canonical(absolute, error);
}

}  // namespace

void check_log_path(const std::string& log, const std::string& checkpoint_dir) {
  const std::filesystem::path path(log);
  const std::filesystem::path parent = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  // Either may not exist yet: a new checkpoint directory is made after this.
  bool in_checkpoint_dir = false;
  if (!checkpoint_dir.empty()) {
    std::error_code log_error, dir_error;
    const std::filesystem::path log_dir = resolved(parent, log_error), dir = resolved(checkpoint_dir, dir_error);
    // Through "/x": a trailing separator ("ck/") names the same directory.
    in_checkpoint_dir = !log_error && !dir_error && log_dir / "x" == dir / "x";
  }
  if (in_checkpoint_dir && is_checkpoint_dir_file(path.filename().string())) {
    throw ConfigError(cat("--log ", log, ": the run's checkpoints write a file of that name into their directory ",
                          checkpoint_dir, ", and a save would replace the log; give the log another name"));
  }
  struct stat info {};
  if (::stat(log.c_str(), &info) == 0) {
    if (!S_ISREG(info.st_mode)) refuse_not_regular(log, info.st_mode);
    const int fd = ::open(log.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) cannot_open(log, errno);
    refuse_if_not_a_log(fd, log, info.st_size);
    ::close(fd);
    if (::access(log.c_str(), W_OK) != 0) cannot_open(log, errno);
  } else if (errno != ENOENT) {
    cannot_open(log, errno);
  } else if (!in_checkpoint_dir && ::access(parent.c_str(), W_OK | X_OK) != 0) {
    cannot_open(log, errno);  // a folder that is not there; a new checkpoint directory is made by the run
  }
}

TrainingLog::TrainingLog(const std::string& path, int every_steps, Units units)
    : path_(path), every_steps_(every_steps), units_(units) {
  // Only a regular file, or a new one: a named pipe would block the run (its
  // writes wait for a reader once the pipe is full), and a device would be
  // written to. Checked with stat() before opening, and again with fstat()
  // on a descriptor opened with O_NONBLOCK (which never blocks), in case the
  // path changed in between.
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) refuse_not_regular(path, info.st_mode);
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0666);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) cannot_open(path, errno);
  if (::fstat(fd, &info) == 0 && !S_ISREG(info.st_mode)) {
    ::close(fd);
    refuse_not_regular(path, info.st_mode);
  }
  refuse_if_not_a_log(fd, path, info.st_size);
  // Blocking writes from here on: O_NONBLOCK was for the open only.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int error = errno;
    ::close(fd);
    cannot_open(path, error);
  }
  fd_ = fd;
  // A run killed in the middle of a line leaves it unfinished: end it, so
  // that this run's first line stands on its own (readers report the broken one).
  char last = '\n';
  if (info.st_size > 0 && ::pread(fd_, &last, 1, info.st_size - 1) == 1 && last != '\n') {
    try {
      write("");
    } catch (...) {  // the destructor does not run for a constructor that throws
      ::close(fd_);
      throw;
    }
  }
}

TrainingLog::~TrainingLog() {
  if (fd_ >= 0) ::close(fd_);
}

// The whole line, appended (O_APPEND) by write(2) until it is all there. A
// write that fails part of the way (a full disk) is cut off again with
// ftruncate, so the file never ends in half a line; then the error.
void TrainingLog::write(const std::string& line) {
  const std::string text = line + "\n";
  struct stat info {};
  const off_t before = ::fstat(fd_, &info) == 0 ? info.st_size : -1;
  size_t written = 0;
  if (!write_all(fd_, text, written)) {
    const int error = errno;
    if (written > 0 && before >= 0) {
      // Where even this fails, the error below is still the reason the log stopped.
      [[maybe_unused]] const int truncated = ::ftruncate(fd_, before);
    }
    throw Error(cat("--log ", path_, ": write failed: ", std::strerror(error)));
  }
}

void TrainingLog::start(const std::map<std::string, std::string>& settings) {
  nlohmann::json line = {{"event", "start"}};
  // JSON holds UTF-8 text only; a path given as a setting may be any bytes.
  for (const auto& [key, value] : settings) line[key] = utf8_or_escaped(value);
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
                       {rate_key(), s.images_per_second}}
            .dump());
}

void TrainingLog::epoch(const EpochReport& e) {
  nlohmann::json line = {{"event", "epoch"},
                         {"epoch", e.epoch},
                         {"epochs", e.epochs},
                         {"global_step", e.global_step},
                         {"lr", e.lr},
                         {"train_loss", e.train_loss},
                         {"seconds", e.seconds},
                         {"data_wait_seconds", e.data_wait_seconds},
                         {"compute_seconds", e.compute_seconds},
                         {rate_key(), e.images_per_second},
                         {"skipped", e.skipped}};
  if (units_ == Units::kTokens) {
    line["train_perplexity"] = std::exp(e.train_loss);
  } else {
    line["train_accuracy"] = e.train_accuracy;
  }
  // fp16's loss scaling (docs/precision.md): the scale after the epoch, and
  // the updates skipped for overflowing gradients.
  if (e.loss_scale) {
    line["loss_scale"] = *e.loss_scale;
    line["overflow_steps"] = e.overflow_steps;
  }
  // A language model's evaluations score no accuracy: its perplexities instead.
  // Each evaluation counts its unreadable samples apart, as `skipped` does training's.
  if (e.validation) {
    line["valid_loss"] = e.validation->loss();
    line["valid_perplexity"] = e.validation->perplexity();
    line["valid_seconds"] = e.validation->seconds;
    line["valid_unreadable"] = e.validation->unreadable;
  }
  if (e.test) {
    line["test_loss"] = e.test->loss();
    if (e.test->has_accuracy) {
      line["test_accuracy"] = e.test->accuracy();
    } else {
      line["test_perplexity"] = e.test->perplexity();
    }
    line["test_seconds"] = e.test->seconds;
    line["test_unreadable"] = e.test->unreadable;
  }
  if (!e.checkpoint.empty()) line["checkpoint"] = utf8_or_escaped(e.checkpoint);
  write(line.dump());
}

}  // namespace glassbox::cli
