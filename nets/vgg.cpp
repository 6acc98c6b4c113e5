// nets/vgg.cpp: VGG (Simonyan & Zisserman, 2014), configurations A, B, D and
// E: VGG-11, -13, -16 and -19, without batch norm, as torchvision builds them.
// Input (N, 3, 224, 224). Five blocks of 3x3 convolutions (pad 1), each
// followed by a 2x2 max pool: 224 -> 112 -> 56 -> 28 -> 14 -> 7; then three
// linear layers. torchvision's AdaptiveAvgPool2d(7) is the identity at 224.
#include <algorithm>

#include "graph/builder.h"
#include "nets/nets.h"

namespace glassbox {
namespace {

constexpr int kChannels[5] = {64, 128, 256, 512, 512};
// Convolutions per block, by depth: A (11), B (13), D (16), E (19).
constexpr struct { int depth; int convs[5]; } kConfigurations[] = {
    {11, {1, 1, 2, 2, 2}}, {13, {2, 2, 2, 2, 2}}, {16, {2, 2, 3, 3, 3}}, {19, {2, 2, 4, 4, 4}}};

}  // namespace

Graph vgg(int depth, int batch) {
  const auto* config = std::find_if(std::begin(kConfigurations), std::end(kConfigurations),
                                    [depth](const auto& c) { return c.depth == depth; });
  if (config == std::end(kConfigurations)) throw ConfigError(cat("VGG-", depth, ": valid depths are 11, 13, 16, 19"));

  GraphBuilder g;
  Value x = g.input("images", {batch, 3, 224, 224});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  for (int block = 0; block < 5; ++block) {
    for (int i = 1; i <= config->convs[block]; ++i) {
      const std::string id = cat(block + 1, "_", i);  // conv3_2: block 3, second convolution
      x = g.relu(g.conv(x, {.out_channels = kChannels[block], .kernel = 3, .pad = 1}, "conv" + id), "relu" + id);
    }
    x = g.max_pool(x, {.kernel = 2, .stride = 2}, cat("pool", block + 1));
  }
  x = g.flatten(x, "flatten");  // 512 x 7 x 7 = 25088
  x = g.dropout(g.relu(g.linear(x, {.out_features = 4096}, "fc6"), "relu6"), {.p = 0.5f}, "drop6");
  x = g.dropout(g.relu(g.linear(x, {.out_features = 4096}, "fc7"), "relu7"), {.p = 0.5f}, "drop7");
  const Value logits = g.linear(x, {.out_features = 1000}, "fc8");
  const Value loss = g.softmax_cross_entropy(logits, labels);
  return std::move(g).build(loss);
}

}  // namespace glassbox
