// data/synthetic.cpp
#include "data/synthetic.h"

#include <random>
#include <vector>

#include "data/shared.h"
#include "tensor/copy.h"

namespace glassbox {

void fill_synthetic_batch(Context& ctx, const Graph& graph, int classes, uint64_t seed) {
  const Tensor& images = graph.input("images");
  const Tensor& labels = graph.input("labels");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> pixels(static_cast<size_t>(images.numel()));
  for (float& p : pixels) p = uniform(rng);
  from_vector<float>(ctx, pixels, images);
  std::vector<int> classes_of(static_cast<size_t>(labels.numel()));
  for (size_t n = 0; n < classes_of.size(); ++n) classes_of[n] = static_cast<int>(n % static_cast<size_t>(classes));
  from_vector<int>(ctx, classes_of, labels);
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
