// layers/conv2d/autotune_cache.h: what the measured cuDNN search
// (--cudnn-search, layers/conv2d/conv2d_algorithms_cuda.cpp) found for a
// convolution problem, kept for the rest of the run and, with
// --autotune-cache FILE, in a file for later runs (Note [Autotune cache]).
// Pure: no CUDA here (tests/test_autotune_cache.cpp).
//
// Note [Autotune cache]: the measured search times every legacy cuDNN
// algorithm and the graph API's engine configurations of each pass on
// scratch tensors, once per layer, and gives the same answer for every layer
// of the same shape. So the results of a search (each candidate's status,
// time, workspace and notes: math type and determinism for an algorithm, the
// engine, its knobs and numerical notes for a configuration) are kept under
// the problem's key, and a layer with the same key takes them instead of
// measuring: it then chooses among them exactly as after a measurement
// (determinism, math and workspace are checked again, for its own options).
// The key holds all that the results depend on: the GPU's name, cuDNN's
// version, the pass, the data type and layout, the shapes, the geometry, the
// math type of the search, the call timed (with a fused bias and ReLU or
// not), and the options under which candidates are left untimed
// (deterministic, the workspace limit). It cannot hold the memory free at
// the time: a search that ran short of workspace memory, where candidates
// went untimed for that alone, is not kept. A file holds the results of any number of
// GPUs and versions side by side; only those of this GPU and this cuDNN ever
// match. It is written whole, atomically, after each search that added to
// it, so an interrupted compile keeps what it measured.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "layers/conv2d/engine_config.h"

namespace glassbox {

// One candidate's result, with cuDNN's enums as their integer values: a
// legacy algorithm, or a graph-API engine configuration (Note [Engine
// configurations], layers/conv2d/engine_config.h).
struct MeasuredAlgorithm {
  int algo = 0;    // the legacy algorithm; -1 for an engine configuration
  int status = 0;  // cudnnStatus_t: CUDNN_STATUS_SUCCESS (0) where it ran
  float time_ms = -1.0f;
  uint64_t memory = 0;  // workspace bytes
  int math = 0;         // cudnnMathType_t (legacy only)
  bool deterministic = false;
  EngineConfig engine;  // engine.engine >= 0 for an engine configuration
  bool is_engine() const { return engine.engine >= 0; }
  bool operator==(const MeasuredAlgorithm&) const = default;
};

// The measured problem: what the results depend on.
struct ConvProblem {
  std::string device;  // the GPU's name ("NVIDIA H100 80GB HBM3")
  std::string cudnn;   // cuDNN's version ("9.19.0")
  std::string pass;    // "forward", "backward-data", "backward-filter"
  std::string data;    // "float32", "bfloat16", "float16"
  std::string layout;  // "NCHW" or "NHWC"
  std::vector<int64_t> x, w, y;  // NCHW and KCRS order, whatever the layout
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, groups = 1;
  int math = 0;  // the search descriptor's cudnnMathType_t
  std::string candidates = "legacy";  // whose candidates were timed: "legacy", "graph" or "legacy+graph"
  bool fused_bias_relu = false;  // a forward timed through the call that adds the bias and applies the ReLU
  // What the run refuses before timing: such candidates are kept untimed, so
  // a run that allows them must time them itself.
  bool deterministic = false;
  uint64_t workspace_limit = 0;
  // "NVIDIA H100 80GB HBM3 | cuDNN 9.19.0 | forward | bfloat16 NHWC | x 64x64x56x56 w 64x64x3x3
  //  y 64x64x56x56 | pad 1x1 stride 1x1 dilation 1x1 groups 1 | math 1 | legacy+graph
  //  | workspace limit 4294967296", and where set " | fused bias+ReLU", " | deterministic"
  std::string key() const;
};

class AutotuneCache {
 public:
  // The run's cache for `path`: "" for this run only, else the file's, read
  // on first use where it exists (a DataError naming the file and what is
  // wrong with it otherwise: not JSON, with the offset; not a cache; a bad
  // entry, named). The same path gives the same cache for the whole run.
  static AutotuneCache& open(const std::string& path);
  // Forgets every open cache (what the next open() of a file reads again).
  static void close_all();

  // The results kept for `key`, or null.
  const std::vector<MeasuredAlgorithm>* find(const std::string& key) const;
  // Keeps `results` under `key` (replacing any) and, for a file's cache,
  // writes the whole cache to it atomically: an Error naming the file where
  // it cannot be written.
  void insert(const std::string& key, std::vector<MeasuredAlgorithm> results);
  size_t size() const { return entries_.size(); }
  const std::string& path() const { return path_; }

 private:
  explicit AutotuneCache(std::string path) : path_(std::move(path)) {}
  std::string path_;
  std::map<std::string, std::vector<MeasuredAlgorithm>> entries_;
};

// The file's text for `entries`, and back (DataError naming `path` for text
// that is not such a document). Schema "glassbox.autotune", version 2:
//   {"kind": "glassbox.autotune", "version": 2,
//    "entries": {KEY: [{"algo", "status", "ms", "memory", "math", "deterministic"
//                       [, "engine": {"index", "knobs": [[TYPE, VALUE], ...],
//                                     "numerical_notes", "behavior_notes"}]}, ...]}}
// Version 1 files (legacy algorithms only) are refused by name: measuring
// again is what brings in the engine configurations.
std::string autotune_json(const std::map<std::string, std::vector<MeasuredAlgorithm>>& entries);
std::map<std::string, std::vector<MeasuredAlgorithm>> parse_autotune_json(const std::string& text,
                                                                         const std::string& path);

}  // namespace glassbox
