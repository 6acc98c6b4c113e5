// nets/nets.h: the classic networks, one function per family. Each builds a
// training graph: inputs "images" (N, C, H, W) float32 and "labels" (N) int32,
// ending in softmax cross-entropy.
#pragma once

#include <array>
#include <vector>

#include "graph/graph.h"

namespace glassbox {

Graph lenet(int batch);            // LeNet-5 for 28x28 grey images, 10 classes
Graph alexnet(int batch);          // AlexNet, torchvision's single-tower variant, 224x224
Graph vgg(int depth, int batch);   // VGG-11/13/16/19 without batch norm, 224x224

// ---- Xception, FCN-5 and multilayer perceptrons (nets/xception.cpp, nets/mlp.cpp) ----
// Xception's sizes; the defaults are the paper's. Tests build narrow variants
// with the same block code.
struct XceptionSizes {
  int image = 299;                               // input H = W
  int classes = 1000;
  std::array<int, 2> stem = {32, 64};            // conv1, conv2
  std::array<int, 3> entry = {128, 256, 728};    // block1..3; the middle flow keeps entry[2]
  int middle_blocks = 8;                         // block4..block11
  std::array<int, 3> exit = {1024, 1536, 2048};  // the last block, conv3, conv4
};
Graph xception(int batch, const XceptionSizes& sizes = {});
// A multilayer perceptron: sizes = {features, hidden..., classes}; linear
// layers fc1, fc2, ... with ReLU between (none after the last). The input is
// (N, 1, 28, 28) when features is 784 (an MNIST image, so that MLP:784,...
// and FCN-5 train on Fashion-MNIST), else (N, features, 1, 1); a Flatten
// makes it (N, features) either way.
Shape mlp_sample(int features);
Graph mlp(int batch, const std::vector<int>& sizes, bool bias);
Graph fcn5(int batch);  // FCN-5: 784-4096-2048-1024-10 without biases

}  // namespace glassbox
