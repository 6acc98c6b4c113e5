// nets/mlp.cpp: fully connected networks. FCN-5 (784-4096-2048-1024-10, no
// biases: 13,707,264 weights, REFERENCE.md) and any multilayer perceptron
// named by its sizes (nets/mlp_spec.h parses "MLP:784,2048,2048,10").
#include "graph/builder.h"
#include "nets/nets.h"

namespace glassbox {

Shape mlp_sample(int features) { return features == 784 ? Shape{1, 28, 28} : Shape{features, 1, 1}; }

Graph mlp(int batch, const std::vector<int>& sizes, bool bias) {
  if (sizes.size() < 2) {
    throw ConfigError(cat("an MLP needs at least two sizes (features, classes), got ", sizes.size()));
  }
  const Shape sample = mlp_sample(sizes.front());
  GraphBuilder g;
  Value x = g.input("images", {batch, sample[0], sample[1], sample[2]});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  x = g.flatten(x, "flatten");
  const int layers = static_cast<int>(sizes.size()) - 1;
  for (int i = 1; i <= layers; ++i) {
    x = g.linear(x, {.out_features = sizes[static_cast<size_t>(i)], .bias = bias}, cat("fc", i));
    if (i < layers) x = g.relu(x, cat("relu", i));
  }
  const Value loss = g.softmax_cross_entropy(x, labels);
  return std::move(g).build(loss);
}

Graph fcn5(int batch) { return mlp(batch, {784, 4096, 2048, 1024, 10}, /*bias=*/false); }

}  // namespace glassbox
