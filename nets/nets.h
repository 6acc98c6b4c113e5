// nets/nets.h: the classic networks, one function per family. Each builds a
// training graph: inputs "images" (N, C, H, W) float32 and "labels" (N) int32,
// ending in softmax cross-entropy.
#pragma once

#include <array>

#include "graph/graph.h"

namespace glassbox {

Graph lenet(int batch);            // LeNet-5 for 28x28 grey images, 10 classes
Graph alexnet(int batch);          // AlexNet, torchvision's single-tower variant, 224x224
Graph vgg(int depth, int batch);   // VGG-11/13/16/19 without batch norm, 224x224

// OverFeat, GoogLeNet, Inception-v3 (GoogLeNet's and Inception-v3's blocks: nets/inception_blocks.h).
Graph overfeat(int batch);         // OverFeat "fast" as convnet-benchmarks defines it, 231x231
Graph googlenet(int batch);        // GoogLeNet as torchvision builds it (batch norm, no aux heads), 224x224
Graph inception_v3(int batch);     // Inception-v3 as torchvision builds it, no aux head, 299x299
// ResNets (He et al., 2015) as torchvision builds them, 224x224, 1000 classes:
// resnet(depth) for ResNet-18, 34, 50, 101, 152; resnet(config) for reduced
// variants (tests), built by the same code.
struct ResNetConfig {
  enum class Block { kBasic, kBottleneck };  // two 3x3 convs (18, 34), or 1x1-3x3-1x1 (50, 101, 152)
  Block block = Block::kBottleneck;
  std::array<int, 4> blocks = {3, 4, 6, 3};  // residual blocks in layer1..layer4
  int base_planes = 64;                      // the stem's and layer1's; each later stage doubles them
  int image_size = 224;
  int classes = 1000;
};
ResNetConfig resnet_config(int depth);  // the paper's table; ConfigError for other depths
Graph resnet(const ResNetConfig& config, int batch);
Graph resnet(int depth, int batch);
// The CIFAR-10 ResNets (He et al., 2015, section 4.2): 6n + 2 layers, 32x32,
// 10 classes, identity (option A, zero-padded) shortcuts. ResNet-56: depth 56.
Graph cifar_resnet(int depth, int batch);

}  // namespace glassbox
