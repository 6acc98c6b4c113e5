// nets/overfeat.cpp: OverFeat "fast" (Sermanet et al., 2013) as
// convnet-benchmarks defines it (torch7/imagenet_winners/overfeat.lua), the
// network its OverFeat timings are of. Input (N, 3, 231, 231).
//
//   layer         kernel, stride, pad   output        parameters    MACs per image
//   conv1 + relu  11x11 s4, 96          96 x 56x56        34,944      109,283,328
//   pool1         2x2 s2                96 x 28x28
//   conv2 + relu  5x5 s1, 256           256 x 24x24      614,656      353,894,400
//   pool2         2x2 s2                256 x 12x12
//   conv3 + relu  3x3 s1 p1, 512        512 x 12x12    1,180,160      169,869,312
//   conv4 + relu  3x3 s1 p1, 1024       1024 x 12x12   4,719,616      679,477,248
//   conv5 + relu  3x3 s1 p1, 1024       1024 x 12x12   9,438,208    1,358,954,496
//   pool5         2x2 s2                1024 x 6x6 = 36,864
//   fc6 + relu    36,864 -> 3072                     113,249,280      113,246,208
//   fc7 + relu    3072 -> 4096                        12,587,008       12,582,912
//   fc8           4096 -> 1000                         4,097,000        4,096,000
//   total                                            145,920,872    2,801,403,904   (2.801 GMAC)
//
// No dropout: convnet-benchmarks comments out both of its dropout layers, and
// these timings are to compare with its. (The paper trains with dropout 0.5 in
// its fully connected layers 6 and 7; it changes neither parameters nor MACs.)
// Its classifier's nn.Threshold(0, 1e-6) (x <= 0 becomes 1e-6) is a ReLU here.
#include "graph/builder.h"
#include "nets/nets.h"

namespace glassbox {

Graph overfeat(int batch) {
  GraphBuilder g;
  Value x = g.input("images", {batch, 3, 231, 231});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  x = g.relu(g.conv(x, {.out_channels = 96, .kernel = 11, .stride = 4}, "conv1"), "relu1");  // 56x56
  x = g.max_pool(x, {.kernel = 2, .stride = 2}, "pool1");                                    // 28x28
  x = g.relu(g.conv(x, {.out_channels = 256, .kernel = 5}, "conv2"), "relu2");               // 24x24
  x = g.max_pool(x, {.kernel = 2, .stride = 2}, "pool2");                                    // 12x12
  x = g.relu(g.conv(x, {.out_channels = 512, .kernel = 3, .pad = 1}, "conv3"), "relu3");
  x = g.relu(g.conv(x, {.out_channels = 1024, .kernel = 3, .pad = 1}, "conv4"), "relu4");
  x = g.relu(g.conv(x, {.out_channels = 1024, .kernel = 3, .pad = 1}, "conv5"), "relu5");
  x = g.max_pool(x, {.kernel = 2, .stride = 2}, "pool5");  // 6x6
  x = g.flatten(x, "flatten");                             // 36,864
  x = g.relu(g.linear(x, {.out_features = 3072}, "fc6"), "relu6");
  x = g.relu(g.linear(x, {.out_features = 4096}, "fc7"), "relu7");
  const Value logits = g.linear(x, {.out_features = 1000}, "fc8");
  const Value loss = g.softmax_cross_entropy(logits, labels);
  return std::move(g).build(loss);
}

}  // namespace glassbox
