// tensor/shape.h: the sizes of a tensor's dimensions, outermost first:
// (N, C, H, W) for images in NCHW. Every size is positive; a rank-0 shape is a
// scalar with one element.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace glassbox {

class Shape {
 public:
  Shape() = default;
  // Throws ShapeError if a size is zero or negative.
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::vector<int64_t> dims);

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int i) const { return dims_.at(static_cast<size_t>(i)); }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t numel() const;
  // The product of the sizes after dimension `axis`: elements in one "row" of it.
  int64_t numel_from(int axis) const;
  std::string str() const;  // "(8, 3, 224, 224)"

  friend bool operator==(const Shape&, const Shape&) = default;

 private:
  std::vector<int64_t> dims_;
};

}  // namespace glassbox
