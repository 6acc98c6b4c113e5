// graph/compile_flags.cpp: the flags that choose how a graph is compiled
// (graph/compile_flags.h).
#include "graph/compile_flags.h"

#include <string_view>

#include "tensor/atomic_file.h"
#include "tensor/error.h"

namespace glassbox {

const std::vector<FlagSpec>& compile_flags() {
  static const std::vector<FlagSpec> flags = {
      {"--precision", "P", "fp32 (TF32 off, default), tf32, or mixed bf16 or fp16 (16-bit values, fp32 master weights)"},
      {"--cudnn-search", "",
       "time every cuDNN candidate (the legacy algorithms and the graph API's engine configurations) and keep the "
       "fastest"},
      {"--autotune-cache", "FILE",
       "with --cudnn-search: keep what it measured in FILE, and reuse it in later runs on the same GPU and cuDNN"},
      {"--cudnn-api", "API",
       "whose convolution candidates a GPU chooses among: auto (default: --cudnn-search times the legacy algorithms "
       "and the graph API's engine configurations together; cuDNN's heuristics pick a legacy algorithm), legacy, "
       "graph"},
      {"--deterministic", "",
       cat("only cuDNN algorithms that give the same bits on every run; the CPU path always does (",
           kDeterministicByDefault ? "on: built with GLASSBOX_DETERMINISTIC" : "off by default", ")")},
      {"--cpu-conv", "PATH",
       "what runs the CPU's convolutions: auto (default: oneDNN above 1x1 and for stride-1 1x1 forwards where built with it), glassbox, onednn"},
      {"--no-winograd", "",
       "only direct convolutions on the CPU (by default Winograd runs the 3x3 stride-1 layers where it measured "
       "faster: oneDNN's kernels where oneDNN runs AVX-512, else Glassbox's on NHWC values)"},
      {"--layout", "L",
       "where values are stored NHWC: auto (default: on the CPU, and on a GPU in tf32, bf16 and fp16), nhwc "
       "(wherever the layers can), nchw (none)"},
      {"--no-fusion", "",
       "run every ReLU itself (by default the convolution, Linear, batch norm or add before a ReLU applies it as "
       "it writes)"},
      {"--no-nvtx", "", "push no NVTX ranges (GPU builds push one per layer and pass for Nsight Systems)"},
  };
  return flags;
}

CompileOptions compile_options_from_flags(const std::map<std::string, std::string>& given, CompileOptions base) {
  CompileOptions options = std::move(base);
  auto value = [&](const char* flag) -> const std::string* {
    const auto it = given.find(flag);
    return it == given.end() ? nullptr : &it->second;
  };
  if (const std::string* precision = value("--precision")) options.precision = parse_precision(*precision);
  if (value("--cudnn-search")) options.layers.algo_search = AlgoSearch::kMeasured;
  if (const std::string* path = value("--autotune-cache")) {
    if (!value("--cudnn-search")) {
      throw ConfigError("--autotune-cache keeps what --cudnn-search measures; give --cudnn-search too");
    }
    // The cache is read at compile and written after the search: an output of
    // the same command at that path would replace it, or be replaced by it.
    for (const char* output : {"--json", "--out", "--log", "--logits", "--benchmark_out"}) {
      if (const std::string* written = value(output); written != nullptr && same_file(*written, *path)) {
        throw ConfigError(cat("--autotune-cache ", *path, " is also ", output,
                              ": the run would write both to one file; give the cache a file of its own"));
      }
    }
    options.layers.autotune_cache = *path;
  }
  if (const std::string* api = value("--cudnn-api")) options.layers.cudnn_api = parse_cudnn_api(*api);
  if (value("--deterministic")) options.layers.deterministic = true;
  if (const std::string* path = value("--cpu-conv")) options.layers.cpu_conv = parse_cpu_conv_path(*path);
  if (value("--no-winograd")) options.layers.cpu_winograd = false;
  if (const std::string* layout = value("--layout")) options.layout = parse_layout_choice(*layout);
  if (value("--no-fusion")) options.fusion = false;
  if (value("--no-nvtx")) options.nvtx = false;
  return options;
}

std::string compile_flags_deciding_bits(const CompileOptions& options, Device device) {
  std::string flags = cat("--layout ", name_of(options.layout));
  if (device.is_cuda()) {
    flags += cat(" --cudnn-api ", name_of(options.layers.cudnn_api));
    if (options.layers.algo_search == AlgoSearch::kMeasured) flags += " --cudnn-search";
    if (options.layers.deterministic) flags += " --deterministic";
  } else {
    flags += cat(" --cpu-conv ", name_of(options.layers.cpu_conv));
    if (!options.layers.cpu_winograd) flags += " --no-winograd";
  }
  if (!options.fusion) flags += " --no-fusion";
  return flags;
}

namespace {

// A flag that only one kind of device reads, and what a run on the other kind
// is told when it is given.
struct IgnoredFlag {
  std::string_view flag;
  bool read_on_cuda;
  std::string_view note;
};

constexpr IgnoredFlag kIgnoredFlags[] = {
    {"--cudnn-search", true, "--cudnn-search chooses cuDNN algorithms; it has no effect on the CPU"},
    {"--autotune-cache", true, "--autotune-cache keeps cuDNN's measured algorithms; it has no effect on the CPU"},
    {"--cudnn-api", true, "--cudnn-api chooses among cuDNN's convolution APIs; it has no effect on the CPU"},
    {"--deterministic", true, "--deterministic restricts cuDNN algorithms; the CPU path is deterministic already"},
    {"--no-nvtx", true, "--no-nvtx leaves out the NVTX ranges of a GPU's steps; the CPU's steps have none"},
    {"--cpu-conv", false, "--cpu-conv chooses the CPU's convolution path; it has no effect on a GPU"},
    {"--no-winograd", false, "--no-winograd chooses the CPU's convolution kernels; it has no effect on a GPU"},
};

}  // namespace

std::vector<std::string> compile_flag_notes(const std::map<std::string, std::string>& given, Device device) {
  std::vector<std::string> notes;
  for (const IgnoredFlag& ignored : kIgnoredFlags) {
    if (ignored.read_on_cuda != device.is_cuda() && given.contains(std::string(ignored.flag))) {
      notes.emplace_back(ignored.note);
    }
  }
  const auto precision = given.find("--precision");
  if (!device.is_cuda() && precision != given.end() && precision->second == flag_name_of(Precision::kTf32)) {
    notes.emplace_back("--precision tf32 rounds the inputs of a GPU's tensor-core products to TF32; the CPU computes "
                       "in fp32, so a tf32 run on the CPU gives fp32's results");
  }
  return notes;
}

}  // namespace glassbox
