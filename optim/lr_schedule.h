// optim/lr_schedule.h: the learning rate at each optimizer step.
//
// With base rate lr0, T steps in the whole run, E steps per epoch and W
// warm-up steps, step t (0-based) uses
//   warm-up (t < W):   lr0 * (t + 1) / W                        (linear, Goyal et al., 2017)
//   constant:          lr0
//   step:E0:G          lr0 * G^floor(epoch / E0), epoch = floor(t / E): epochs
//                      counted from the run's first step, warm-up included, as
//                      Goyal et al. decay at epochs 30, 60 and 80 of the run
//   cosine:            lr0 * (1 + cos(pi * (t - W) / (T - W))) / 2   (Loshchilov & Hutter, 2017, no restarts)
// The rate is a function of the step alone, so a resumed run continues on
// the same curve.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace glassbox {

struct LrSchedule {
  enum class Kind { kConstant, kStep, kCosine };
  Kind kind = Kind::kConstant;
  int step_epochs = 0;    // kStep: multiply by gamma every step_epochs epochs
  float gamma = 0.1f;     // kStep
  int64_t warmup_steps = 0;

  // The rate of step `step` (0 or more: ConfigError otherwise) of a run of
  // `total_steps` with `steps_per_epoch`.
  float at(float base_lr, int64_t step, int64_t total_steps, int64_t steps_per_epoch) const;
  // As parse_lr_schedule reads it: "constant", "step:30:0.1", "cosine" (warm-up apart).
  std::string str() const;
  bool operator==(const LrSchedule&) const = default;
};

// ConfigError for a schedule at() cannot follow: warm-up steps are 0 or
// more, and a step schedule needs step_epochs >= 1 and gamma in (0, 1]
// (parse_lr_schedule gives only such).
void check_lr_schedule(const LrSchedule& schedule);

// "constant", "cosine" or "step:EPOCHS:GAMMA" (step:30:0.1: a tenth every 30
// epochs); throws ConfigError naming `flag`, the text and the valid forms.
LrSchedule parse_lr_schedule(std::string_view text, std::string_view flag);

}  // namespace glassbox
