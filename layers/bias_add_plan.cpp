// layers/bias_add_plan.cpp: see layers/bias_add_plan.h.
#include "layers/bias_add_plan.h"

namespace glassbox {

BiasAddPlan plan_bias_add(int64_t images, int64_t channels, int64_t pixels, Layout layout, int64_t value_bytes) {
  if (images < 1 || channels < 1 || pixels < 1) {
    throw ShapeError(cat("bias add: y of ", images, " images, ", channels, " channels and ", pixels,
                         " pixels (each at least 1)"));
  }
  if (value_bytes != 4 && value_bytes != 2) {
    throw ShapeError(cat("bias add: values of ", value_bytes, " bytes (4 or 2)"));
  }
  return {.count = images * channels * pixels,
          .channels = channels,
          .run = layout == Layout::kNCHW ? pixels : 1,
          .pack = 16 / value_bytes};
}

}  // namespace glassbox
