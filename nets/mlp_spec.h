// nets/mlp_spec.h: multilayer perceptrons named by their sizes, so that any
// of them can be used wherever a network name is taken (glassbox summary|time,
// bench_nets --net):
//
//   MLP:784,2048,2048,10     features, hidden sizes..., classes
//
// The prefix is case-insensitive ("mlp:784,10" too); the sizes are decimal
// integers separated by single commas, nothing else: no spaces, no empty
// items, no trailing comma. Each size is from 1 to kMlpMaxSize, the classes
// at least 2, and there are at most kMlpMaxLayers linear layers. The network
// (nets/nets.h mlp) has biases and ReLU between its linear layers; its input
// is (1, 28, 28) for 784 features, else (features, 1, 1).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox {

inline constexpr std::string_view kMlpPrefix = "MLP:";
inline constexpr int kMlpMaxSize = 65'536;  // features or units of one layer
inline constexpr int kMlpMaxLayers = 32;    // linear layers: sizes - 1

// Whether `name` starts with "MLP:" (any case): it names an MLP, valid or not.
bool has_mlp_prefix(std::string_view name);

// The sizes of `name` if it starts with "MLP:" (any case); std::nullopt if it
// does not (some other network's name). Throws ConfigError, quoting the name,
// if it starts with "MLP:" but the rest is not a valid list.
std::optional<std::vector<int>> parse_mlp_spec(std::string_view name);

// The canonical name: "MLP:784,2048,10" (upper-case prefix, plain numbers).
std::string mlp_spec_name(const std::vector<int>& sizes);

}  // namespace glassbox
