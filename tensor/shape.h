// tensor/shape.h: the sizes of a tensor's dimensions, outermost first:
// (N, C, H, W) for images in NCHW. Every size is positive; a rank-0 shape is a
// scalar with one element.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox {

// Most elements one tensor may have: 2^48, over a petabyte of float32, far
// past any device, and small enough that byte counts and the costs computed
// from shapes (layers' multiply-accumulates) stay well inside 64 bits.
inline constexpr int64_t kMaxElements = int64_t{1} << 48;

// a * b, or SizeError naming `what` when the product does not fit in 64 bits.
int64_t checked_multiply(int64_t a, int64_t b, std::string_view what);
// a + b, likewise.
int64_t checked_add(int64_t a, int64_t b, std::string_view what);

class Shape {
 public:
  Shape() = default;
  // Throws ShapeError if a size is zero or negative, SizeError if the shape
  // has more than kMaxElements elements.
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::vector<int64_t> dims);

  int rank() const { return static_cast<int>(dims_.size()); }
  // Throws std::out_of_range naming the shape and the axis for an axis it
  // does not have: a program's error, not bad input (the fuzz targets count
  // any exception that is not a glassbox::Error as a finding).
  int64_t operator[](int i) const {
    if (i < 0 || i >= rank()) [[unlikely]] refuse_axis(i);
    return dims_[static_cast<size_t>(i)];
  }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t numel() const;
  // The product of the sizes after dimension `axis` (-1: all of them):
  // elements in one "row" of it. Another axis: std::out_of_range, as above.
  int64_t numel_from(int axis) const;
  std::string str() const;  // "(8, 3, 224, 224)"
  // The multi-index of element `flat` (row-major, 0 <= flat < numel(); else
  // std::out_of_range), for errors that name a position: element 7 of (4, 3)
  // is "(2, 1)".
  std::string index_str(int64_t flat) const;

  friend bool operator==(const Shape&, const Shape&) = default;

 private:
  [[noreturn]] void refuse_axis(int i) const;
  std::vector<int64_t> dims_;
};

}  // namespace glassbox
