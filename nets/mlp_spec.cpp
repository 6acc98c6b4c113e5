// nets/mlp_spec.cpp: "MLP:784,2048,10" -> {784, 2048, 10}, checked in full.
#include "nets/mlp_spec.h"

#include <algorithm>
#include <cctype>

#include "tensor/error.h"
#include "tensor/grouped.h"
#include "tensor/parse.h"

namespace glassbox {
namespace {

// The name as messages show it, escaped as excerpt() escapes: whole, unless
// it is long (a pasted file).
std::string shown(std::string_view name) {
  constexpr size_t kShown = 64;
  if (name.size() <= kShown) return cat("network '", excerpt(name, 4 * kShown), "'");
  return cat("network '", excerpt(name.substr(0, kShown), 4 * kShown), "...' (",
             grouped(static_cast<int64_t>(name.size())), " bytes)");
}

}  // namespace

bool has_mlp_prefix(std::string_view name) {
  if (name.size() < kMlpPrefix.size()) return false;
  return std::equal(kMlpPrefix.begin(), kMlpPrefix.end(), name.begin(), [](char want, char got) {
    return want == std::toupper(static_cast<unsigned char>(got));
  });
}

std::optional<std::vector<int>> parse_mlp_spec(std::string_view name) {
  if (!has_mlp_prefix(name)) return std::nullopt;
  const std::string_view list = name.substr(kMlpPrefix.size());
  if (list.empty()) {
    throw ConfigError(cat(shown(name), ": no sizes; write MLP:<features>,<hidden>,...,<classes>, e.g. ",
                          "MLP:784,2048,2048,10"));
  }
  if (std::any_of(list.begin(), list.end(), [](unsigned char c) { return std::isspace(c); })) {
    throw ConfigError(cat(shown(name), ": contains white space; write the sizes without spaces, e.g. MLP:784,2048,10"));
  }
  // Counted before anything is parsed, so a huge list costs no more than a short one.
  const size_t count = 1 + static_cast<size_t>(std::count(list.begin(), list.end(), ','));
  if (count == 1) {
    throw ConfigError(cat(shown(name), ": one size; an MLP needs at least two, its features and its classes ",
                          "(MLP:<features>,<hidden>,...,<classes>)"));
  }
  if (count - 1 > kMlpMaxLayers) {
    throw ConfigError(cat(shown(name), ": ", count, " sizes make ", count - 1, " linear layers, more than the ",
                          kMlpMaxLayers, " allowed"));
  }
  std::vector<int> sizes;
  size_t start = 0;
  for (size_t i = 0; i < count; ++i) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view item = list.substr(start, comma - start);
    const bool classes = i + 1 == count;
    const std::string role = i == 0 ? "features" : classes ? "classes" : cat("hidden size ", i);
    if (item.empty()) {
      throw ConfigError(cat(shown(name), ": ", role, " is empty; separate the sizes with single commas, ",
                            "with none at either end"));
    }
    // Non-numbers, signs, zero, negatives and sizes past the limit.
    sizes.push_back(static_cast<int>(parse_int(cat(shown(name), ": ", role), item, classes ? 2 : 1, kMlpMaxSize)));
    start = comma + 1;
  }
  return sizes;
}

std::string mlp_spec_name(const std::vector<int>& sizes) {
  std::string name(kMlpPrefix);
  for (size_t i = 0; i < sizes.size(); ++i) name += cat(i ? "," : "", sizes[i]);
  return name;
}

}  // namespace glassbox
