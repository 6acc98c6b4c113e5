// nets/lenet.cpp: LeNet-5 (LeCun et al., 1998) for 28x28 images such as
// Fashion-MNIST, with today's usual substitutions: ReLU for the scaled tanh
// and max for the trainable average ("subsampling") layers. The paper feeds
// 32x32 images; padding the 28x28 input by 2 gives conv1 the same 28x28 output.
#include "graph/builder.h"
#include "nets/nets.h"

namespace glassbox {

Graph lenet(int batch) {
  GraphBuilder g;
  Value x = g.input("images", {batch, 1, 28, 28});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  x = g.relu(g.conv(x, {.out_channels = 6, .kernel = 5, .pad = 2}, "conv1"), "relu1");  // 6 x 28x28
  x = g.max_pool(x, {.kernel = 2, .stride = 2}, "pool1");                                // 6 x 14x14
  x = g.relu(g.conv(x, {.out_channels = 16, .kernel = 5}, "conv2"), "relu2");            // 16 x 10x10
  x = g.max_pool(x, {.kernel = 2, .stride = 2}, "pool2");                                // 16 x 5x5
  x = g.flatten(x, "flatten");                                                           // 400
  x = g.relu(g.linear(x, {.out_features = 120}, "fc3"), "relu3");
  x = g.relu(g.linear(x, {.out_features = 84}, "fc4"), "relu4");
  const Value logits = g.linear(x, {.out_features = 10}, "fc5");
  const Value loss = g.softmax_cross_entropy(logits, labels);
  return std::move(g).build(loss);
}

}  // namespace glassbox
