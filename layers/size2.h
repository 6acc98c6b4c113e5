// layers/size2.h: a (height, width) pair for kernel sizes, strides, padding and
// dilation. Implicit from one int, so options read like the papers:
//   {.kernel = 3, .pad = 1}   and, for factorised kernels,   {.kernel = {1, 7}, .pad = {0, 3}}
#pragma once

#include <string>

namespace glassbox {

struct Size2 {
  int h = 0;
  int w = 0;
  constexpr Size2() = default;
  constexpr Size2(int both) : h(both), w(both) {}  // NOLINT: implicit on purpose
  constexpr Size2(int height, int width) : h(height), w(width) {}
  friend constexpr bool operator==(const Size2&, const Size2&) = default;
  // "3" when square, "1x7" otherwise.
  std::string str() const { return h == w ? std::to_string(h) : std::to_string(h) + "x" + std::to_string(w); }
};

}  // namespace glassbox
