// optim/lr_schedule.cpp
#include "optim/lr_schedule.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>

#include "tensor/error.h"
#include "tensor/parse.h"

namespace glassbox {

float LrSchedule::at(float base_lr, int64_t step, int64_t total_steps, int64_t steps_per_epoch) const {
  if (step < 0) throw ConfigError(cat("learning-rate schedule: step ", step, ": steps count from 0"));
  if (step < warmup_steps) return base_lr * static_cast<float>(step + 1) / static_cast<float>(warmup_steps);
  switch (kind) {
    case Kind::kConstant:
      return base_lr;
    case Kind::kStep: {
      const int64_t epoch = step / std::max<int64_t>(steps_per_epoch, 1);
      return base_lr * std::pow(gamma, static_cast<float>(epoch / step_epochs));
    }
    case Kind::kCosine: {
      const double span = static_cast<double>(std::max<int64_t>(total_steps - warmup_steps, 1));
      const double progress = std::min(static_cast<double>(step - warmup_steps) / span, 1.0);
      return static_cast<float>(base_lr * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
    }
  }
  return base_lr;
}

void check_lr_schedule(const LrSchedule& schedule) {
  if (schedule.warmup_steps < 0) {
    throw ConfigError(cat("learning-rate schedule ", schedule.str(), ": ", schedule.warmup_steps,
                          " warm-up steps; there are 0 or more"));
  }
  if (schedule.kind != LrSchedule::Kind::kStep) return;
  if (schedule.step_epochs < 1 || !(schedule.gamma > 0.0f && schedule.gamma <= 1.0f)) {
    throw ConfigError(cat("learning-rate schedule step:", schedule.step_epochs, ":", schedule.gamma,
                          ": a step schedule decays every 1 or more epochs by a gamma in (0, 1]"));
  }
}

std::string LrSchedule::str() const {
  switch (kind) {
    case Kind::kConstant: return "constant";
    case Kind::kStep: {
      // The shortest text that reads back as this gamma: "0.1", not the
      // stream's six digits, which lose a gamma such as 0.12345678.
      char text[32];
      return cat("step:", step_epochs, ":", std::string_view(text, std::to_chars(text, text + sizeof text, gamma).ptr));
    }
    case Kind::kCosine: return "cosine";
  }
  return "?";
}

LrSchedule parse_lr_schedule(std::string_view text, std::string_view flag) {
  if (text == "constant") return {.kind = LrSchedule::Kind::kConstant};
  if (text == "cosine") return {.kind = LrSchedule::Kind::kCosine};
  if (text.starts_with("step:")) {
    const std::string_view rest = text.substr(5);
    const size_t colon = rest.find(':');
    if (colon != std::string_view::npos) {
      const int epochs = static_cast<int>(parse_int(cat(flag, " step:EPOCHS"), rest.substr(0, colon), 1, kMaxInt));
      const std::string what = cat(flag, " step:EPOCHS:GAMMA");
      const std::string_view text_of_gamma = rest.substr(colon + 1);
      const double checked = parse_number(what, text_of_gamma, 0.0, 1.0);
      // Rounded once, straight to the float it is kept as: a double rounded
      // again to float can land one float off (str() prints the float's
      // shortest text, which must read back as that float).
      float gamma = 0.0f;
      const char* const last = text_of_gamma.data() + text_of_gamma.size();
      const auto [end, error] = std::from_chars(text_of_gamma.data(), last, gamma);
      if (error != std::errc() || end != last) gamma = static_cast<float>(checked);
      if (gamma == 0.0f) {
        throw ConfigError(cat(what, " must be above 0: a gamma of ", text_of_gamma,
                              " would leave a rate of 0 after the first step, which trains nothing"));
      }
      return {.kind = LrSchedule::Kind::kStep, .step_epochs = epochs, .gamma = gamma};
    }
  }
  throw ConfigError(cat(flag, ": unknown schedule '", text,
                        "'; valid: constant, cosine, step:EPOCHS:GAMMA (e.g. step:30:0.1)"));
}

}  // namespace glassbox
