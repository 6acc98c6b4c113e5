// nets/nets.h: the classic networks, one function per family. Each builds a
// training graph: inputs "images" (N, C, H, W) float32 and "labels" (N) int32,
// ending in softmax cross-entropy.
#pragma once

#include "graph/graph.h"

namespace glassbox {

Graph lenet(int batch);            // LeNet-5 for 28x28 grey images, 10 classes
Graph alexnet(int batch);          // AlexNet, torchvision's single-tower variant, 224x224
Graph vgg(int depth, int batch);   // VGG-11/13/16/19 without batch norm, 224x224

// OverFeat, GoogLeNet, Inception-v3 (GoogLeNet's and Inception-v3's blocks: nets/inception_blocks.h).
Graph overfeat(int batch);         // OverFeat "fast" as convnet-benchmarks defines it, 231x231
Graph googlenet(int batch);        // GoogLeNet as torchvision builds it (batch norm, no aux heads), 224x224
Graph inception_v3(int batch);     // Inception-v3 as torchvision builds it, no aux head, 299x299

}  // namespace glassbox
