// tools/cli/progress.cpp
#include "tools/cli/progress.h"

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "tools/cli/table.h"

namespace glassbox::cli {
namespace {

constexpr int kBarWidth = 20;
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
constexpr const char* kHeader =
    "epoch  train loss  train acc  test loss  test acc  time (s)   data wait      compute  images/s        lr";
constexpr const char* kLanguageModelHeader =
    "epoch   train ppl   valid ppl    test ppl  time (s)   data wait      compute  tokens/s        lr";

// `value` with `digits` decimals, or fewer where that leaves no space in a
// column of `width`; where even none fit (a perplexity of 1e69, a learning
// rate of 1e9), three significant digits with an exponent.
std::string number_for(double value, int digits, size_t width) {
  for (int d = digits; d >= 0; --d) {
    std::string text = fixed(value, d);
    if (text.size() < width) return text;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

// A perplexity, or "-" where there is no evaluation.
std::string perplexity(const std::optional<Evaluation>& e) { return e ? number_for(e->perplexity(), 2, 12) : "-"; }

std::string percent(double fraction) { return fixed(100.0 * fraction, 2) + "%"; }

// Right-aligns `text` in `width` columns, with at least one space before it.
std::string right(const std::string& text, size_t width) {
  return text.size() >= width ? " " + text : std::string(width - text.size(), ' ') + text;
}

}  // namespace

std::string clock_time(double seconds) {
  const auto total = static_cast<int64_t>(std::max(0.0, std::round(seconds)));
  const int64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  char text[32];
  if (h > 0) {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", static_cast<long long>(h), static_cast<long long>(m),
                  static_cast<long long>(s));
  } else {
    std::snprintf(text, sizeof text, "%lld:%02lld", static_cast<long long>(m), static_cast<long long>(s));
  }
  return text;
}

// A run whose reader has gone (a pipe closed, a disk full) stops at the next
// line it cannot write, rather than train on with nobody to see it.
void Progress::flush_checked() {
  errno = 0;
  if (std::fflush(out_) != 0 || std::ferror(out_)) {
    throw Error(cat("standard output: writing failed", errno != 0 ? cat(": ", std::strerror(errno)) : std::string(),
                    "; the run stops (its checkpoints so far are kept)"));
  }
}

Progress::Progress(std::FILE* out, bool terminal, Units units, int ranks)
    : out_(out), terminal_(terminal), units_(units), ranks_(std::max(ranks, 1)) {}

void Progress::header() {
  std::fprintf(out_, "%s\n", units_ == Units::kTokens ? kLanguageModelHeader : kHeader);
  flush_checked();
}

void Progress::step(const StepReport& s) {
  const double eta = s.step > 0 ? s.elapsed_seconds / static_cast<double>(s.step) * static_cast<double>(s.steps - s.step)
                                : 0.0;
  const char* unit = units_ == Units::kTokens ? " tok/s" : " img/s";
  const std::string per_rank =
      ranks_ > 1 ? cat(" (", grouped(static_cast<int64_t>(s.images_per_second)), " per rank)") : "";
  const std::string numbers = cat("loss ", fixed(s.loss, 4), "  lr ", fixed(s.lr, 4), "  ",
                                  grouped(static_cast<int64_t>(s.images_per_second * ranks_)), unit, per_rank,
                                  "  ETA ", clock_time(eta));
  if (terminal_) {
    const auto now = std::chrono::steady_clock::now();
    if (s.step != s.steps && now - last_draw_ < kRedrawInterval) return;
    last_draw_ = now;
    const int filled = static_cast<int>(kBarWidth * s.step / std::max<int64_t>(s.steps, 1));
    const std::string bar = std::string(static_cast<size_t>(filled), '#') + std::string(kBarWidth - filled, '.');
    // \r: back to the line's start; \x1b[K: erase what a longer line left.
    std::fprintf(out_, "\repoch %d/%d  %lld/%lld [%s]  %s\x1b[K", s.epoch, s.epochs, static_cast<long long>(s.step),
                 static_cast<long long>(s.steps), bar.c_str(), numbers.c_str());
    bar_shown_ = true;
  } else {
    // A line at each tenth of the epoch; an epoch of fewer than 10 steps has only its row.
    const int64_t tenth = s.steps / 10;
    if (tenth == 0 || s.step % tenth != 0 || s.step == s.steps) return;
    std::fprintf(out_, "  epoch %d/%d step %lld/%lld  %s\n", s.epoch, s.epochs, static_cast<long long>(s.step),
                 static_cast<long long>(s.steps), numbers.c_str());
  }
  flush_checked();
}

void Progress::epoch(const EpochReport& e) {
  if (bar_shown_) {
    std::fprintf(out_, "\r\x1b[K");
    bar_shown_ = false;
  }
  const double time = std::max(e.seconds, 1e-9);
  std::string row = right(cat(e.epoch, "/", e.epochs), 5);
  if (units_ == Units::kTokens) {
    row += right(number_for(std::exp(e.train_loss), 2, 12), 12) + right(perplexity(e.validation), 12) +
           right(perplexity(e.test), 12);
  } else {
    row += right(fixed(e.train_loss, 4), 12) + right(percent(e.train_accuracy), 11) +
           right(e.test ? fixed(e.test->loss(), 4) : "-", 11) + right(e.test ? percent(e.test->accuracy()) : "-", 10);
  }
  row += right(fixed(e.seconds, 2), 10) +
                    right(fixed(e.data_wait_seconds, 2), 7) +
                    right(cat(static_cast<int>(std::round(100.0 * e.data_wait_seconds / time)), "%"), 5) +
                    right(fixed(e.compute_seconds, 2), 8) +
                    right(cat(static_cast<int>(std::round(100.0 * e.compute_seconds / time)), "%"), 5) +
                    right(grouped(static_cast<int64_t>(e.images_per_second)), 10) + right(number_for(e.lr, 6, 10), 10);
  // Unreadable images left out of this row's numbers, per split (each named on stderr once).
  std::string skipped;
  for (const auto& [split, count] : {std::pair<const char*, int64_t>{"train", e.skipped},
                                     {"valid", e.validation ? e.validation->unreadable : 0},
                                     {"test", e.test ? e.test->unreadable : 0}}) {
    if (count > 0) skipped += cat(skipped.empty() ? "" : ", ", grouped(count), " ", split);
  }
  if (!skipped.empty()) row += cat("  (unreadable, skipped: ", skipped, ")");
  // fp16's loss scaling: the updates skipped for overflowing gradients, and the scale it ends at.
  if (e.loss_scale) {
    row += cat("  (loss scale ", *e.loss_scale, e.overflow_steps > 0 ? cat(", ", grouped(e.overflow_steps),
                                                                          " overflowing steps skipped")
                                                                    : std::string(), ")");
  }
  std::fprintf(out_, "%s\n", row.c_str());
  flush_checked();
}

}  // namespace glassbox::cli
