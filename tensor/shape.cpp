// tensor/shape.cpp: construction checks and printing for Shape and Device.
#include "tensor/shape.h"

#include "tensor/device.h"
#include "tensor/error.h"

namespace glassbox {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::vector<int64_t>(dims)) {}

Shape::Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (dims_[i] <= 0) {
      throw ShapeError(cat("shape ", str(), ": dimension ", i, " is ", dims_[i],
                           "; every size must be positive"));
    }
  }
}

int64_t Shape::numel() const { return numel_from(-1); }

int64_t Shape::numel_from(int axis) const {
  int64_t n = 1;
  for (int i = axis + 1; i < rank(); ++i) n *= dims_[static_cast<size_t>(i)];
  return n;
}

std::string Shape::str() const {
  std::string s = "(";
  for (size_t i = 0; i < dims_.size(); ++i) s += (i ? ", " : "") + std::to_string(dims_[i]);
  return s + ")";
}

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.starts_with("cuda:")) {
    const std::string index(text.substr(5));
    if (!index.empty() && index.find_first_not_of("0123456789") == std::string::npos) {
      return cuda(std::stoi(index));
    }
  }
  throw ConfigError(cat("unknown device '", text, "'; valid: cpu, cuda, cuda:N"));
}

std::string Device::str() const {
  return is_cuda() ? "cuda:" + std::to_string(index) : "cpu";
}

}  // namespace glassbox
