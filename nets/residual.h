// nets/residual.h: the residual blocks of He et al., shared by nets/resnet.cpp
// (ImageNet, as torchvision builds them) and nets/resnet_cifar.cpp (CIFAR-10,
// section 4.2 of the paper). Internal to nets/.
//
// Node names are torchvision's module names (conv1, bn1, ..., downsample.0),
// which the common PyTorch CIFAR ResNets share, so that checkpoints map one to
// one. torchvision's blocks have no module for their ReLUs (one ReLU is reused)
// or their sum (`out += identity` in forward), so those are named
// <block>.relu1, .relu2 (.relu3), in order, and <block>.add.
// In namespace residual, so that other families' helpers (a conv_bn of their
// own) cannot collide with these at link time.
#pragma once

#include <string>

#include "graph/builder.h"

namespace glassbox::residual {

// How a block that changes the shape (stride or channels) carries x to its sum.
// Elsewhere the shortcut is x itself. The paper's options (2015, section 3.3):
enum class Shortcut {
  kZeroPad,     // A: x subsampled, the new channels zero (no parameters): "<block>.shortcut"
  kProjection,  // B: 1x1 convolution with the block's stride + batch norm: "<block>.downsample.0", ".1"
};

// A bias-free convolution and its batch norm: every convolution in a ResNet.
Value conv_bn(GraphBuilder& g, Value x, const std::string& conv, const std::string& bn, Conv2d::Options options);

// Two 3x3 convolutions (ResNet-18/34, the CIFAR ResNets), the first with the stride:
//   relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)),  `planes` channels out.
Value basic_block(GraphBuilder& g, Value x, const std::string& name, int planes, int stride, Shortcut shortcut);

// 1x1 reduce, 3x3 with the stride (torchvision's "v1.5"), 1x1 expand to 4 x planes:
//   relu(bn3(conv3(relu(bn2(conv2(relu(bn1(conv1(x)))))))) + projection(x)).
Value bottleneck_block(GraphBuilder& g, Value x, const std::string& name, int planes, int stride);

}  // namespace glassbox::residual
