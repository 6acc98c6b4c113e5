// tensor/shape.cpp: construction checks and printing for Shape and Device.
#include "tensor/shape.h"

#include <stdexcept>

#include "tensor/device.h"
#include "tensor/error.h"
#include "tensor/parse.h"

namespace glassbox {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::vector<int64_t>(dims)) {}

int64_t checked_multiply(int64_t a, int64_t b, std::string_view what) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    throw SizeError(cat(what, ": ", a, " x ", b, " does not fit in 64 bits"));
  }
  return product;
}

int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) throw SizeError(cat(what, ": ", a, " + ", b, " does not fit in 64 bits"));
  return sum;
}

Shape::Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {
  int64_t elements = 1;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (dims_[i] <= 0) {
      throw ShapeError(cat("shape ", str(), ": dimension ", i, " is ", dims_[i],
                           "; every size must be positive"));
    }
    // Sizes are at most kMaxElements from here on, so the product cannot wrap
    // before it is compared.
    if (dims_[i] > kMaxElements || elements > kMaxElements / dims_[i]) {
      throw SizeError(cat("shape ", str(), " has more than 2^48 = ", kMaxElements,
                          " elements, the most a tensor may have"));
    }
    elements *= dims_[i];
  }
}

void Shape::refuse_axis(int i) const {
  throw std::out_of_range(cat("shape ", str(), " of rank ", rank(), " has no dimension ", i));
}

int64_t Shape::numel() const { return numel_from(-1); }

int64_t Shape::numel_from(int axis) const {
  if (axis < -1 || axis >= rank()) [[unlikely]] refuse_axis(axis);
  int64_t n = 1;
  for (int i = axis + 1; i < rank(); ++i) n *= dims_[static_cast<size_t>(i)];
  return n;
}

std::string Shape::str() const {
  std::string s = "(";
  for (size_t i = 0; i < dims_.size(); ++i) s += (i ? ", " : "") + std::to_string(dims_[i]);
  return s + ")";
}

std::string Shape::index_str(int64_t flat) const {
  if (flat < 0 || flat >= numel()) [[unlikely]] {
    throw std::out_of_range(cat("shape ", str(), " has ", numel(), " elements, no element ", flat));
  }
  std::vector<int64_t> index(dims_.size());
  for (size_t i = dims_.size(); i-- > 0;) {  // innermost first
    index[i] = flat % dims_[i];
    flat /= dims_[i];
  }
  std::string s = "(";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + ")";
}

Device Device::parse(std::string_view text, std::string_view what) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.starts_with("cuda:")) {
    return cuda(static_cast<int>(parse_int(cat(what, " index in '", text, "'"), text.substr(5), 0, kMaxInt)));
  }
  throw ConfigError(cat(what, ": unknown device '", text, "'; valid: cpu, cuda, cuda:N"));
}

std::string Device::str() const {
  return is_cuda() ? "cuda:" + std::to_string(index) : "cpu";
}

}  // namespace glassbox
