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
// ---- Language models (nets/lstm_lm.cpp) ----
// A word-level LSTM language model (Zaremba et al., 2014), laid out as
// PyTorch's word_language_model example: encoder (Embedding), rnn (LSTM),
// decoder (Linear over the last dimension), dropout on the non-recurrent
// connections. Inputs "tokens" and "labels" (the next tokens), (T, B) int32.
struct LstmLmConfig {
  int vocabulary = 10000;  // V
  int hidden = 650;        // H, also the embedding's size
  int layers = 2;
  int steps = 35;          // T: unrolled time steps per window
  float dropout = 0.5f;    // on the embedding, between layers and before the decoder; 0: none
};
Graph lstm_language_model(const LstmLmConfig& config, int batch);

}  // namespace glassbox
