// graph/compile_flags.h: the command-line flags that choose how a graph is
// compiled, in one table that every program declares (`glassbox`'s verbs and
// bench_nets), and the one function that turns their values into
// CompileOptions. A flag added here reaches every program, with one spelling,
// one help line and one meaning.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "tensor/device.h"

namespace glassbox {

// One flag of a program: "--batch", "N" (empty for a switch such as
// --cudnn-search), and its help line.
struct FlagSpec {
  std::string name;
  std::string value_name;
  std::string help;
};

// --precision P, --cudnn-search, --deterministic, --cpu-conv PATH,
// --no-winograd, --layout L, --no-fusion, --no-nvtx.
const std::vector<FlagSpec>& compile_flags();

// The flags a program was given, by name: "--precision" -> "tf32", a switch
// -> "". Names that are not compile_flags() are left alone (a program's own
// flags pass through the same map). Starts from `base` (a program's own
// choices: phase, layer timing) and sets what the flags choose; throws
// ConfigError naming a flag whose value is not one of its choices, and an
// --autotune-cache that is also one of the command's outputs (--json, --out,
// --log, --logits, --benchmark_out).
CompileOptions compile_options_from_flags(const std::map<std::string, std::string>& given,
                                          CompileOptions base = {});

// The compile flags that decide the arithmetic's bits on `device`, as the
// flags that choose them, in one canonical order: "--layout auto --cpu-conv
// auto" for the CPU's defaults, with "--no-winograd" or "--no-fusion" where
// those are off; on a GPU "--layout auto --cudnn-api auto" and any of
// "--cudnn-search", "--deterministic", "--no-fusion". The precision is a run
// setting of its own and is left out, as are flags that change no bits
// (--no-nvtx, --autotune-cache) and those that do nothing on `device`. A
// checkpoint records it (Note [What a bit-for-bit resume needs]).
std::string compile_flags_deciding_bits(const CompileOptions& options, Device device);

// One line for each flag given that changes nothing on `device`, saying so
// ("--cudnn-search chooses cuDNN algorithms; it has no effect on the CPU"),
// for a program to print once before it runs.
std::vector<std::string> compile_flag_notes(const std::map<std::string, std::string>& given, Device device);

}  // namespace glassbox
