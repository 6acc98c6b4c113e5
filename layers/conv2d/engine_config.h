// layers/conv2d/engine_config.h: what the measured cuDNN search needs to know
// about a graph-API engine configuration, without CUDA: its identity (the
// engine's global index and its knob choices, which rebuild it), its notes,
// its name in reports, whether the run's options allow it, and the strides
// that describe a convolution's tensors to the graph API. Used by
// layers/conv2d/conv_graph_cuda.cpp and layers/conv2d/conv2d_algorithms_cuda.cpp;
// tested in tests/test_engine_config.cpp.
//
// Note [Engine configurations]: cuDNN's graph API describes a convolution
// pass as an operation graph of one node and offers, through its
// heuristics, engine configurations to run it: an engine (a family of
// kernels, by global index) with a value for each of its knobs (tile size,
// split-k, stages, ...). Each comes with numerical notes (tensor cores,
// non-deterministic reduction, Winograd, inputs converted down to a narrower
// type, reductions in reduced precision) that say what it computes, and
// behaviour notes (compiled at run time) that say what building it costs.
// An engine and its knob values rebuild the same configuration, so that pair
// is what the autotune cache keeps. The legacy algorithms are candidates of
// the same search: whichever is fastest on the GPU wins.
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/error.h"

namespace glassbox {

// cudnnBackendNumericalNote_t and cudnnBackendBehaviorNote_t as bits
// (1 << the enum's value); conv_graph_cuda.cpp checks that the values match.
enum NumericalNote : uint32_t {
  kNoteTensorCore = 1u << 0,
  kNoteDownConvertInputs = 1u << 1,
  kNoteReducedPrecisionReduction = 1u << 2,
  kNoteFft = 1u << 3,
  kNoteNondeterministic = 1u << 4,
  kNoteWinograd = 1u << 5,
};
enum BehaviorNote : uint32_t {
  kNoteRuntimeCompilation = 1u << 0,
};

struct EngineConfig {
  int64_t engine = -1;                         // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  std::vector<std::pair<int, int64_t>> knobs;  // (cudnnBackendKnobType_t, value), in cuDNN's order
  uint32_t numerical_notes = 0;                // NumericalNote bits
  uint32_t behavior_notes = 0;                 // BehaviorNote bits
  bool operator==(const EngineConfig&) const = default;
};

// "engine 12 (TILE_SIZE 3, STAGES 4)"; "engine 0" without knobs.
std::string engine_config_name(const EngineConfig& config);
// The name of a cudnnBackendKnobType_t value ("TILE_SIZE"), "KNOB_<n>" for
// one this table does not know.
std::string knob_name(int knob_type);
// The notes that matter in a report: "tensor-op, winograd, nondeterministic".
std::string numerical_notes_text(uint32_t notes);

// Why the run's options refuse a configuration with these notes, or nothing
// when they allow it. `data` is the convolution's data type; `tf32` whether
// the precision lets float data round to TF32 on tensor cores. The rules are
// the legacy algorithms' (Note [Math type per pass],
// layers/conv2d/conv2d_algorithms_cuda.cpp), in the graph API's words:
// - deterministic asked for: no NONDETERMINISTIC;
// - float data without TF32 (the reference precision): no TENSOR_CORE;
// - any data: no DOWN_CONVERT_INPUTS (float to a narrower type, or between
//   the 16-bit types, which cuDNN does not name);
// - 16-bit data: no REDUCED_PRECISION_REDUCTION (the sums stay fp32).
std::optional<std::string> engine_refusal(uint32_t numerical_notes, DType data, bool tf32, bool deterministic);

// The configurations a pass's search takes from cuDNN's heuristics: the
// lists in their order (mode A's, then the fallback list's), each
// configuration once; at most `limit` that `refusal` allows, in that order,
// then at most `limit` that it refuses, which are listed with the reason and
// never built or timed. Only allowed ones count toward the limit: the
// heuristics rank by what is fastest, not by what the run allows, so in fp32
// without TF32 mode A's first configurations are tensor-core ones, and a
// limit counted over all of them could leave none that the run may use.
// Of the configurations cuDNN compiles at run time (RUNTIME_COMPILATION:
// NVRTC, seconds each to build), at most `runtime_compiled_limit` are
// allowed; later ones are refused, so that a cold search of a network's
// convolutions is not spent compiling (the precompiled ones take their place).
struct SelectedConfig {
  EngineConfig config;
  std::optional<std::string> refusal;  // why the run refuses it; nothing: allowed
};
template <typename Refusal>  // std::optional<std::string>(const EngineConfig&)
std::vector<SelectedConfig> select_engine_configs(const std::vector<std::vector<EngineConfig>>& lists, size_t limit,
                                                  size_t runtime_compiled_limit, Refusal&& refusal) {
  std::vector<SelectedConfig> allowed, refused;
  std::vector<const EngineConfig*> seen;
  size_t runtime_compiled = 0;
  for (const std::vector<EngineConfig>& list : lists) {
    for (const EngineConfig& c : list) {
      bool repeat = false;
      for (const EngineConfig* s : seen) repeat = repeat || *s == c;
      if (repeat) continue;
      seen.push_back(&c);
      std::optional<std::string> why = refusal(c);
      if (!why && (c.behavior_notes & kNoteRuntimeCompilation) != 0 && allowed.size() < limit &&
          runtime_compiled++ >= runtime_compiled_limit) {
        why = cat("compiled at run time, past the ", runtime_compiled_limit, " such configurations a search builds");
      }
      std::vector<SelectedConfig>& into = why ? refused : allowed;
      if (into.size() < limit) into.push_back({c, std::move(why)});
    }
  }
  allowed.insert(allowed.end(), std::make_move_iterator(refused.begin()), std::make_move_iterator(refused.end()));
  return allowed;
}

// Dimensions and strides of a convolution tensor in the graph API: the
// dimensions always in NCHW (or KCRS) order, the strides saying how the
// elements lie: `channels_last` for NHWC values and KRSC filters.
struct GraphTensorLayout {
  std::array<int64_t, 4> dims{};
  std::array<int64_t, 4> strides{};
};
GraphTensorLayout graph_tensor_layout(const std::vector<int64_t>& nchw, bool channels_last);

}  // namespace glassbox
