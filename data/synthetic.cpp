// data/synthetic.cpp
#include "data/synthetic.h"

#include <random>
#include <vector>

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

}  // namespace glassbox
