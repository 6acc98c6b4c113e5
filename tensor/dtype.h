// tensor/dtype.h: element types. float32 is what layers compute in; bfloat16
// and float16 are the stored types of a mixed-precision graph (values, their
// gradients and the weights in use), int32 holds labels and token ids.
#pragma once

#include <cstddef>
#include <string_view>

namespace glassbox {

enum class DType { kFloat32, kInt32, kFloat16, kBFloat16 };

constexpr std::size_t size_of(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
  }
  return 0;
}

constexpr std::string_view name_of(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kInt32: return "int32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
  }
  return "?";
}

// The C++ type stored for a DType, for typed access: Tensor::data<float>().
template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() { return DType::kFloat32; }
template <>
constexpr DType dtype_of<int>() { return DType::kInt32; }

}  // namespace glassbox
