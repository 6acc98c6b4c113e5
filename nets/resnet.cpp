// nets/resnet.cpp: ResNet-18, -34, -50, -101 and -152 (He et al., 2015), as
// torchvision builds them. Input (N, 3, 224, 224).
//   stem:   conv1 7x7 s2 p3, bn1, relu, maxpool 3x3 s2 p1     224 -> 112 -> 56
//   layer1..layer4: residual blocks of 64, 128, 256, 512 planes; the first
//           block of layer2..4 has stride 2                   56 -> 28 -> 14 -> 7
//   head:   global average pool, fc 1000
// Every convolution is bias-free and followed by batch norm. A block that
// changes the shape projects its shortcut (option B: 1x1 conv + bn). The
// bottleneck is torchvision's "v1.5": its stride is on the 3x3 conv2, where
// the paper's Caffe models had it on the first 1x1; that costs 4.089 GMAC
// instead of 3.86 and is the model torchvision's weights were trained as.
#include <algorithm>

#include "nets/nets.h"
#include "nets/residual.h"

namespace glassbox {

using namespace residual;  // the blocks: conv_bn, basic_block, bottleneck_block, Shortcut

namespace {

using Block = ResNetConfig::Block;
// Blocks per stage, by depth (the paper's Table 1).
constexpr struct { int depth; Block block; std::array<int, 4> blocks; } kDepths[] = {
    {18, Block::kBasic, {2, 2, 2, 2}},       {34, Block::kBasic, {3, 4, 6, 3}},
    {50, Block::kBottleneck, {3, 4, 6, 3}},  {101, Block::kBottleneck, {3, 4, 23, 3}},
    {152, Block::kBottleneck, {3, 8, 36, 3}}};

}  // namespace

ResNetConfig resnet_config(int depth) {
  const auto* row =
      std::find_if(std::begin(kDepths), std::end(kDepths), [depth](const auto& d) { return d.depth == depth; });
  if (row == std::end(kDepths)) throw ConfigError(cat("ResNet-", depth, ": valid depths are 18, 34, 50, 101, 152"));
  return {.block = row->block, .blocks = row->blocks};
}

Graph resnet(int depth, int batch) { return resnet(resnet_config(depth), batch); }

Graph resnet(const ResNetConfig& config, int batch) {
  GraphBuilder g;
  Value x = g.input("images", {batch, 3, config.image_size, config.image_size});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  x = conv_bn(g, x, "conv1", "bn1", {.out_channels = config.base_planes, .kernel = 7, .stride = 2, .pad = 3});
  x = g.max_pool(g.relu(x, "relu"), {.kernel = 3, .stride = 2, .pad = 1}, "maxpool");
  for (int stage = 0; stage < 4; ++stage) {
    const int planes = config.base_planes << stage;  // 64, 128, 256, 512
    for (int i = 0; i < config.blocks[stage]; ++i) {
      const std::string name = cat("layer", stage + 1, ".", i);  // layer3.5: stage 3, sixth block
      const int stride = (stage > 0 && i == 0) ? 2 : 1;
      x = config.block == Block::kBasic ? basic_block(g, x, name, planes, stride, Shortcut::kProjection)
                                        : bottleneck_block(g, x, name, planes, stride);
    }
  }
  x = g.flatten(g.global_avg_pool(x, "avgpool"), "flatten");  // 512 (basic) or 2048 (bottleneck) features
  const Value logits = g.linear(x, {.out_features = config.classes}, "fc");
  return std::move(g).build(g.softmax_cross_entropy(logits, labels));
}

}  // namespace glassbox
