// layers/bias_gradient_plan.cpp: see layers/bias_gradient_plan.h.
#include "layers/bias_gradient_plan.h"

#include <climits>
#include <utility>

namespace glassbox {

BiasGradientPlan plan_bias_gradient(int64_t images, int64_t channels, int64_t pixels, Layout layout) {
  if (images < 1 || channels < 1 || pixels < 1) {
    throw ShapeError(cat("bias gradient: dy of ", images, " images, ", channels, " channels and ", pixels,
                         " pixels (each at least 1)"));
  }
  // One pixel is the same memory either way, (N, K) rows: one product.
  if (pixels == 1) layout = Layout::kNHWC;
  // One image channels-last is K x P: one product over the pixels.
  if (layout == Layout::kNHWC && images == 1) std::swap(images, pixels);
  BiasGradientPlan plan;
  if (layout == Layout::kNCHW) {
    plan = {.a_rows = pixels, .a_columns = images * channels, .transpose_a = true, .channels = channels,
            .second_ones = images};
  } else {
    plan = {.a_rows = channels * pixels, .a_columns = images, .transpose_a = false, .channels = channels,
            .second_ones = pixels};
  }
  if (plan.a_rows > INT_MAX || plan.a_columns > INT_MAX) {
    throw ShapeError(cat("bias gradient: dy of ", images, " x ", channels, " x ", pixels,
                         " is beyond cuBLAS's int range as a ", plan.a_rows, " x ", plan.a_columns, " matrix"));
  }
  return plan;
}

}  // namespace glassbox
