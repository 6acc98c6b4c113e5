// layers/pool2d/pool2d_window.cpp: Pool2d's window checks and shapes (the CPU path
// is layers/pool2d/pool2d.cpp).
#include <cstdint>
#include <limits>

#include "layers/pool2d/pool2d.h"

namespace glassbox {
namespace {

std::string by(int64_t h, int64_t w) { return cat(h, "x", w); }

}  // namespace

int64_t pooled_length(int64_t size, int kernel, int stride, int pad, bool ceil_mode) {
  const int64_t span = size + 2 * int64_t{pad} - kernel;  // where the last window may start
  if (!ceil_mode) return span / stride + 1;
  int64_t length = (span + stride - 1) / stride + 1;
  // PyTorch's rule: the last window must start inside the input or the left
  // padding, never in the right padding alone.
  if ((length - 1) * stride >= size + pad) --length;
  return length;
}

Pool2d::Pool2d(std::string name, Mode mode, Window window)
    : Layer(std::move(name)), mode_(mode), window_(window) {
  if (window_.ceil_mode && mode_ == Mode::kAverage) {
    fail_option(
        "ceil mode is for max pooling only (an average window past the padding has no divisor "
        "both PyTorch and cuDNN agree on)");
  }
  if (window_.global) {  // the input's plane, known at bind
    const Window unset;
    if (window_.kernel != unset.kernel || window_.stride != unset.stride || window_.pad != unset.pad ||
        window_.ceil_mode) {
      fail_option(cat("global pooling's window is the input's plane, stride 1, no padding: leave kernel, stride, "
                      "padding and ceil mode unset, got kernel ", by(window_.kernel.h, window_.kernel.w),
                      ", stride ", window_.stride.str(), ", padding ", window_.pad.str(),
                      window_.ceil_mode ? ", ceil mode" : ""));
    }
    return;
  }
  const Window w = resolve(nullptr);
  const Size2& k = w.kernel;
  if (k.h <= 0 || k.w <= 0) fail_option(cat("kernel must be positive, got ", by(k.h, k.w)));
  if (w.stride.h <= 0 || w.stride.w <= 0) {
    fail_option(cat("stride must be positive (0: the kernel size), got ", by(window_.stride.h, window_.stride.w)));
  }
  if (w.pad.h < 0 || w.pad.w < 0) fail_option(cat("padding must not be negative, got ", by(w.pad.h, w.pad.w)));
  if (2 * int64_t{w.pad.h} > k.h || 2 * int64_t{w.pad.w} > k.w) {
    fail_option(cat("padding ", by(w.pad.h, w.pad.w), " is more than half the ", by(k.h, k.w), " kernel"));
  }
}

Pool2d::Window Pool2d::resolve(const Shape* input) const {
  Window w = window_;
  if (w.global) {
    w.stride = 1;
    w.pad = 0;
    if (input != nullptr) w.kernel = Size2(static_cast<int>((*input)[2]), static_cast<int>((*input)[3]));
  } else {
    if (w.stride.h == 0) w.stride.h = w.kernel.h;
    if (w.stride.w == 0) w.stride.w = w.kernel.w;
  }
  return w;
}

Pool2d::Window Pool2d::window() const { return resolve(bound() ? &input_shapes()[0] : nullptr); }

std::string Pool2d::describe() const {
  if (window_.global) return "global";
  const Window w = resolve(nullptr);
  std::string text = cat(by(w.kernel.h, w.kernel.w), " s", w.stride.str());
  if (w.pad != Size2(0)) text += cat(" p", w.pad.str());
  if (w.ceil_mode) text += " ceil";
  return text;
}

Shape Pool2d::infer(std::span<const Shape> inputs) const {
  expect_rank(inputs, 0, 4, "(N, C, H, W)");
  const Shape& x = inputs[0];
  if (x[2] * x[3] > std::numeric_limits<int32_t>::max()) {
    fail(cat("input plane ", by(x[2], x[3]), " has ", x[2] * x[3],
             " elements, more than 2^31 - 1 (max pooling finds its maxima by int32 index)"));
  }
  const Window w = resolve(&x);
  if (!window_.global) {  // the options themselves were checked by the constructor
    const Size2& k = w.kernel;
    // Padding at most the plane's size (and at most half the kernel) keeps
    // the kernel within three times the plane: the pooling loops walk the
    // whole window, so its size must be bounded by the plane's.
    if (w.pad.h > x[2] || w.pad.w > x[3]) {
      fail(cat("padding ", by(w.pad.h, w.pad.w), " is wider than the ", by(x[2], x[3]),
               " input plane; pad at most the plane's size"));
    }
    if (x[2] + 2 * w.pad.h < k.h || x[3] + 2 * w.pad.w < k.w) {
      fail(cat("the ", by(k.h, k.w), " window does not fit the ", by(x[2], x[3]), " input plane padded by ",
               by(w.pad.h, w.pad.w)));
    }
  }
  // Global windows cover the plane exactly: ceil mode changes nothing.
  return Shape{x[0], x[1], pooled_length(x[2], w.kernel.h, w.stride.h, w.pad.h, w.ceil_mode),
               pooled_length(x[3], w.kernel.w, w.stride.w, w.pad.w, w.ceil_mode)};
}

}  // namespace glassbox
