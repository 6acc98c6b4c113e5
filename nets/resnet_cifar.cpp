// nets/resnet_cifar.cpp: the CIFAR-10 ResNets of He et al. (2015, section
// 4.2): 6n + 2 weighted layers (ResNet-20, 32, 44, 56, 110 for n = 3, 5, 7, 9, 18).
// Input (N, 3, 32, 32).
//   stem:   conv1 3x3 16, bn1, relu
//   layer1..layer3: n basic blocks each, of 16, 32, 64 planes; the first
//           block of layer2 and layer3 has stride 2              32 -> 16 -> 8
//   head:   global average pool, fully connected 10
// Shortcuts are identities (option A): where a block halves the map and
// doubles the channels, x is subsampled (x[:, :, ::2, ::2]) and padded with
// zero channels, so the network has no parameters beyond its 6n + 2 layers.
// Names follow the common PyTorch implementation (akamaster's
// pytorch_resnet_cifar10), whose trained weights are the ones people load:
// conv1, bn1, layerS.B.conv1 ..., layerS.B.shortcut and "linear" for the
// classifier, which it names so (torchvision's "fc" would not match its weights).
#include "nets/nets.h"
#include "nets/residual.h"

namespace glassbox {

using namespace residual;  // the blocks: conv_bn, basic_block, bottleneck_block, Shortcut

Graph cifar_resnet(int depth, int batch) {
  if (depth < 8 || (depth - 2) % 6 != 0) {
    throw ConfigError(cat("CIFAR ResNet-", depth, ": the depth must be 6n + 2 with n >= 1 (20, 32, 44, 56, 110, ...)"));
  }
  const int n = (depth - 2) / 6;
  GraphBuilder g;
  Value x = g.input("images", {batch, 3, 32, 32});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  x = g.relu(conv_bn(g, x, "conv1", "bn1", {.out_channels = 16, .kernel = 3, .pad = 1}), "relu");
  for (int stage = 0; stage < 3; ++stage) {
    const int planes = 16 << stage;  // 16, 32, 64
    for (int i = 0; i < n; ++i) {
      const int stride = (stage > 0 && i == 0) ? 2 : 1;
      x = basic_block(g, x, cat("layer", stage + 1, ".", i), planes, stride, Shortcut::kZeroPad);
    }
  }
  x = g.flatten(g.global_avg_pool(x, "avgpool"), "flatten");  // 64 features
  const Value logits = g.linear(x, {.out_features = 10}, "linear");
  return std::move(g).build(g.softmax_cross_entropy(logits, labels));
}

}  // namespace glassbox
