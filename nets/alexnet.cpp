// nets/alexnet.cpp: AlexNet as torchvision builds it, the single-tower variant
// of "One weird trick for parallelizing convolutional neural networks"
// (Krizhevsky, 2014): 64-192-384-256-256 filters, no LRN, dropout before the
// two hidden linear layers. Input (N, 3, 224, 224). torchvision's
// AdaptiveAvgPool2d(6) is left out: at 224x224 it is the identity.
#include "graph/builder.h"
#include "nets/nets.h"

namespace glassbox {

Graph alexnet(int batch) {
  GraphBuilder g;
  Value x = g.input("images", {batch, 3, 224, 224});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  x = g.relu(g.conv(x, {.out_channels = 64, .kernel = 11, .stride = 4, .pad = 2}, "conv1"), "relu1");  // 55x55
  x = g.max_pool(x, {.kernel = 3, .stride = 2}, "pool1");                                                // 27x27
  x = g.relu(g.conv(x, {.out_channels = 192, .kernel = 5, .pad = 2}, "conv2"), "relu2");
  x = g.max_pool(x, {.kernel = 3, .stride = 2}, "pool2");                                                // 13x13
  x = g.relu(g.conv(x, {.out_channels = 384, .kernel = 3, .pad = 1}, "conv3"), "relu3");
  x = g.relu(g.conv(x, {.out_channels = 256, .kernel = 3, .pad = 1}, "conv4"), "relu4");
  x = g.relu(g.conv(x, {.out_channels = 256, .kernel = 3, .pad = 1}, "conv5"), "relu5");
  x = g.max_pool(x, {.kernel = 3, .stride = 2}, "pool5");                                                // 6x6
  x = g.flatten(x, "flatten");                                                                           // 9216
  x = g.relu(g.linear(g.dropout(x, {.p = 0.5f}, "drop6"), {.out_features = 4096}, "fc6"), "relu6");
  x = g.relu(g.linear(g.dropout(x, {.p = 0.5f}, "drop7"), {.out_features = 4096}, "fc7"), "relu7");
  const Value logits = g.linear(x, {.out_features = 1000}, "fc8");
  const Value loss = g.softmax_cross_entropy(logits, labels);
  return std::move(g).build(loss);
}

}  // namespace glassbox
