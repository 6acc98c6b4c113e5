// layers/conv2d/engine_config.cpp: Note [Engine configurations] (layers/conv2d/engine_config.h).
#include "layers/conv2d/engine_config.h"

#include "tensor/error.h"

namespace glassbox {
namespace {

// cudnnBackendKnobType_t by value (cuDNN 9); conv_graph_cuda.cpp checks a few against the header.
constexpr std::array<std::string_view, 44> kKnobNames = {
    "SPLIT_K",      "SWIZZLE",     "TILE_SIZE",  "USE_TEX",      "EDGE",          "KBLOCK",
    "LDGA",         "LDGB",        "CHUNK_K",    "SPLIT_H",      "WINO_TILE",     "MULTIPLY",
    "SPLIT_K_BUF",  "TILEK",       "STAGES",     "REDUCTION_MODE", "CTA_SPLIT_K_MODE", "SPLIT_K_SLC",
    "IDX_MODE",     "SLICED",      "SPLIT_RS",   "SINGLEBUFFER", "LDGC",          "SPECFILT",
    "KERNEL_CFG",   "WORKSPACE",   "TILE_CGA",   "TILE_CGA_M",   "TILE_CGA_N",    "BLOCK_SIZE",
    "OCCUPANCY",    "ARRAY_SIZE_PER_THREAD", "NUM_C_PER_BLOCK", "SPLIT_COLS", "TILE_ROWS", "TILE_COLS",
    "LOAD_SIZE",    "CTA_COUNT",   "STREAM_K",   "SPLIT_P_SLC",  "TILE_M",        "TILE_N",
    "WARP_SPEC_CFG", "SWAP_AB"};

}  // namespace

std::string knob_name(int knob_type) {
  if (knob_type >= 0 && static_cast<size_t>(knob_type) < kKnobNames.size()) {
    return std::string(kKnobNames[static_cast<size_t>(knob_type)]);
  }
  return cat("KNOB_", knob_type);
}

std::string engine_config_name(const EngineConfig& config) {
  std::string knobs;
  for (const auto& [type, value] : config.knobs) knobs += cat(knobs.empty() ? "" : ", ", knob_name(type), " ", value);
  return cat("engine ", config.engine, knobs.empty() ? "" : " (" + knobs + ")");
}

std::string numerical_notes_text(uint32_t notes) {
  constexpr std::array<std::pair<uint32_t, std::string_view>, 6> kNames = {{
      {kNoteTensorCore, "tensor-op"},
      {kNoteWinograd, "winograd"},
      {kNoteFft, "fft"},
      {kNoteNondeterministic, "nondeterministic"},
      {kNoteDownConvertInputs, "down-converts its inputs"},
      {kNoteReducedPrecisionReduction, "reduced-precision sums"},
  }};
  std::string text;
  for (const auto& [bit, name] : kNames) {
    if ((notes & bit) != 0) text += cat(text.empty() ? "" : ", ", name);
  }
  return text;
}

std::optional<std::string> engine_refusal(uint32_t notes, DType data, bool tf32, bool deterministic) {
  const bool narrow = data != DType::kFloat32;
  if (deterministic && (notes & kNoteNondeterministic) != 0) return "not deterministic";
  if (!narrow && !tf32 && (notes & kNoteTensorCore) != 0) return "uses tensor-op math, TF32 is off";
  if ((notes & kNoteDownConvertInputs) != 0) {
    return narrow ? "converts the 16-bit data (DOWN_CONVERT_INPUTS)" : "would down-convert float data";
  }
  if (narrow && (notes & kNoteReducedPrecisionReduction) != 0) {
    return "sums in reduced precision (REDUCED_PRECISION_REDUCTION), not fp32";
  }
  return std::nullopt;
}

GraphTensorLayout graph_tensor_layout(const std::vector<int64_t>& nchw, bool channels_last) {
  if (nchw.size() != 4) throw Error(cat("graph_tensor_layout: a convolution tensor has 4 dimensions, not ", nchw.size()));
  GraphTensorLayout t;
  const int64_t n = nchw[0], c = nchw[1], h = nchw[2], w = nchw[3];
  t.dims = {n, c, h, w};
  t.strides = channels_last ? std::array<int64_t, 4>{h * w * c, 1, w * c, c} : std::array<int64_t, 4>{c * h * w, h * w, w, 1};
  return t;
}

}  // namespace glassbox
