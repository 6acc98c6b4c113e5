// data/synthetic.cpp
#include "data/synthetic.h"

#include <random>
#include <vector>

#include "data/shared.h"
#include "tensor/copy.h"

namespace glassbox {

void fill_synthetic_batch(Context& ctx, const Graph& graph, int classes, uint64_t seed) {
  if (classes < 1) throw ConfigError(cat("fill_synthetic_batch: ", classes, " classes; labels need at least one"));
  std::mt19937_64 rng(seed);
  for (const Node& node : graph.nodes()) {
    if (!node.is_input()) continue;
    const size_t count = static_cast<size_t>(node.value.numel());
    if (node.dtype == DType::kFloat32) {
      std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
      std::vector<float> values(count);
      for (float& v : values) v = uniform(rng);
      from_vector<float>(ctx, values, node.value);
    } else if (node.dtype == DType::kInt32) {
      std::uniform_int_distribution<int> ids(0, classes - 1);
      const bool labels = node.name == "labels";
      std::vector<int> values(count);
      for (size_t n = 0; n < count; ++n) values[n] = labels ? static_cast<int>(n % static_cast<size_t>(classes)) : ids(rng);
      from_vector<int>(ctx, values, node.value);
    } else {
      throw ConfigError(cat("fill_synthetic_batch: input '", node.name, "' is ", name_of(node.dtype),
                            "; synthetic batches hold float32 and int32 inputs"));
    }
  }
}

SyntheticDataset::SyntheticDataset(SyntheticOptions options) : options_(std::move(options)) {
  if (options_.size < 1 || options_.classes < 1) {
    throw ConfigError(cat(options_.name, ": ", options_.size, " samples of ", options_.classes,
                          " classes; a synthetic dataset needs at least one of each"));
  }
}

std::string SyntheticDataset::describe() const {
  const Shape& s = options_.sample;
  std::string shape;
  for (int i = 0; i < s.rank(); ++i) shape += cat(i ? "x" : "", s[i]);
  return cat(options_.name, ": ", grouped(options_.size), " random images ", shape, ", ", options_.classes,
             " classes (seed ", options_.seed, ")");
}

int SyntheticDataset::load(int64_t index, std::span<float> pixels, SampleMode, std::mt19937_64&) const {
  check_load_arguments(*this, index, pixels);
  // splitmix64's finaliser, so that neighbouring indices seed unrelated streams.
  uint64_t key = options_.seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(index);
  key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ull;
  key = (key ^ (key >> 27)) * 0x94d049bb133111ebull;
  std::mt19937_64 rng(key ^ (key >> 31));
  for (float& p : pixels) p = draw_symmetric(rng);
  return static_cast<int>(index % options_.classes);
}

}  // namespace glassbox
