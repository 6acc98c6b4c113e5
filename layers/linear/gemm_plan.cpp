// layers/linear/gemm_plan.cpp: see layers/linear/gemm_plan.h.
#include "layers/linear/gemm_plan.h"

#include <climits>
#include <cmath>
#include <cstring>
#include <limits>

#include "tensor/convert.h"
#include "tensor/error.h"

namespace glassbox {

LinearGemm linear_gemm(LinearGemmPass pass, int64_t rows, int64_t in, int64_t out) {
  switch (pass) {
    case LinearGemmPass::kForward:  // y^T = w^T x^T: w stored I x O, x^T I x N
      return {.transpose_a = true, .transpose_b = false, .m = out, .n = rows, .k = in,
              .a_rows = in, .a_columns = out, .b_rows = in, .b_columns = rows};
    case LinearGemmPass::kBackwardData:  // dx^T = w dy^T: w I x O, dy^T O x N
      return {.transpose_a = false, .transpose_b = false, .m = in, .n = rows, .k = out,
              .a_rows = in, .a_columns = out, .b_rows = out, .b_columns = rows};
    case LinearGemmPass::kBackwardWeights:  // dw^T = x^T dy: x^T I x N, dy stored O x N
      return {.transpose_a = false, .transpose_b = true, .m = in, .n = out, .k = rows,
              .a_rows = in, .a_columns = rows, .b_rows = out, .b_columns = rows};
  }
  return {};
}

LinearEpilogue linear_epilogue(LinearGemmPass pass, bool bias, bool relu) {
  switch (pass) {
    case LinearGemmPass::kForward:
      if (bias) return relu ? LinearEpilogue::kBiasRelu : LinearEpilogue::kBias;
      return relu ? LinearEpilogue::kRelu : LinearEpilogue::kNone;
    case LinearGemmPass::kBackwardData:
      return LinearEpilogue::kNone;
    case LinearGemmPass::kBackwardWeights:
      return bias ? LinearEpilogue::kBiasGradientOfB : LinearEpilogue::kNone;
  }
  return LinearEpilogue::kNone;
}

bool bias_gradient_in_epilogue(DType data, bool tf32) { return data == DType::kFloat32 && !tf32; }

std::vector<LinearEpilogue> lt_epilogue_fallbacks(LinearEpilogue wanted) {
  switch (wanted) {
    case LinearEpilogue::kNone: return {LinearEpilogue::kNone};
    case LinearEpilogue::kBiasRelu: return {LinearEpilogue::kBiasRelu, LinearEpilogue::kBias, LinearEpilogue::kNone};
    case LinearEpilogue::kBias:
    case LinearEpilogue::kRelu:
    case LinearEpilogue::kBiasGradientOfB: return {wanted, LinearEpilogue::kNone};
  }
  return {LinearEpilogue::kNone};
}

bool applies_relu(LinearEpilogue e) { return e == LinearEpilogue::kRelu || e == LinearEpilogue::kBiasRelu; }

std::vector<uint8_t> nan_bytes(DType data) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (is_16_bit_float(data)) {
    const uint16_t bits = to_16_bit(nan, data);
    return {static_cast<uint8_t>(bits & 0xff), static_cast<uint8_t>(bits >> 8)};
  }
  std::vector<uint8_t> bytes(sizeof(float));
  std::memcpy(bytes.data(), &nan, sizeof(float));
  return bytes;
}

bool is_nan_bytes(DType data, std::span<const uint8_t> bytes) {
  if (bytes.size() != size_of(data)) {
    throw Error(cat("is_nan_bytes: ", bytes.size(), " bytes are not one ", name_of(data), " value"));
  }
  if (is_16_bit_float(data)) {
    return std::isnan(from_16_bit(static_cast<uint16_t>(bytes[0] | (bytes[1] << 8)), data));
  }
  float value = 0;
  std::memcpy(&value, bytes.data(), sizeof(float));
  return std::isnan(value);
}

namespace {

bool adds_bias(LinearEpilogue e) { return e == LinearEpilogue::kBias || e == LinearEpilogue::kBiasRelu; }

}  // namespace

EpiloguePasses passes_left(LinearEpilogue wanted, LinearEpilogue got) {
  return {.bias = adds_bias(wanted) && !adds_bias(got),
          .relu = applies_relu(wanted) && !applies_relu(got),
          .bias_gradient = wanted == LinearEpilogue::kBiasGradientOfB && got != LinearEpilogue::kBiasGradientOfB};
}

std::string describe(const EpiloguePasses& passes) {
  // The bias and the ReLU run as one pass (launch_bias_add: Note [A bias add
  // by Glassbox's kernel], layers/bias_add_plan.h).
  std::vector<std::string> parts;
  if (passes.bias && passes.relu) {
    parts.emplace_back("bias and ReLU as one pass of their own");
  } else if (passes.bias || passes.relu) {
    parts.emplace_back(cat(passes.bias ? "bias" : "ReLU", " as a pass of its own"));
  }
  if (passes.bias_gradient) parts.emplace_back("bias gradient as a pass of its own");
  std::string text;
  for (const std::string& part : parts) text += text.empty() ? part : cat("; ", part);
  return text;
}

bool fits_gemm_ex(const LinearGemm& gemm) {
  for (int64_t size : {gemm.m, gemm.n, gemm.k, gemm.a_rows, gemm.b_rows}) {
    if (size < 1 || size > INT_MAX) return false;
  }
  return true;
}

std::string_view name_of(LinearGemmPass pass) {
  switch (pass) {
    case LinearGemmPass::kForward: return "forward";
    case LinearGemmPass::kBackwardData: return "backward-data";
    case LinearGemmPass::kBackwardWeights: return "backward-weights";
  }
  return "?";
}

std::string_view name_of(LinearEpilogue epilogue) {
  switch (epilogue) {
    case LinearEpilogue::kNone: return "none";
    case LinearEpilogue::kBias: return "bias";
    case LinearEpilogue::kRelu: return "ReLU";
    case LinearEpilogue::kBiasRelu: return "bias + ReLU";
    case LinearEpilogue::kBiasGradientOfB: return "bias gradient";
  }
  return "?";
}

}  // namespace glassbox
