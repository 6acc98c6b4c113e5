// nets/googlenet.cpp: GoogLeNet (Szegedy et al., "Going Deeper with
// Convolutions", 2014) exactly as torchvision builds it, with batch norm
// (BasicConv2d: convolution without bias, batch norm eps 0.001, ReLU), without
// the two auxiliary heads and without transform_input. Input (N, 3, 224, 224).
// 6,624,904 parameters, 1.498 GMAC per image. Where torchvision differs from
// the paper we follow torchvision: no LRN, batch norm after every convolution,
// a 3x3 convolution in the "5x5" branch (InceptionBlocks::googlenet_inception),
// dropout 0.2 (the paper: 0.4).
//
// torchvision's max pools round up (ceil_mode=True): 112 -> 56 -> 28 -> 14 -> 7
// where rounding down would give 55 -> 27 -> 13 -> 6.
#include "nets/inception_blocks.h"
#include "nets/nets.h"

namespace glassbox {

Graph googlenet(int batch) {
  GraphBuilder g;
  const InceptionBlocks blocks(g);
  Value x = g.input("images", {batch, 3, 224, 224});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  const Pool2d::Window halve{.kernel = 3, .stride = 2, .ceil_mode = true};

  x = blocks.basic_conv(x, "conv1", {.out_channels = 64, .kernel = 7, .stride = 2, .pad = 3});  // 112x112
  x = g.max_pool(x, halve, "maxpool1");                                                           // 56x56
  x = blocks.basic_conv(x, "conv2", {.out_channels = 64, .kernel = 1});
  x = blocks.basic_conv(x, "conv3", {.out_channels = 192, .kernel = 3, .pad = 1});
  x = g.max_pool(x, halve, "maxpool2");  // 28x28

  // The paper's Table 1: #1x1, #3x3 reduce, #3x3, #5x5 reduce, #5x5, pool proj.
  x = blocks.googlenet_inception(x, "inception3a", {64, 96, 128, 16, 32, 32});  // 256 channels
  x = blocks.googlenet_inception(x, "inception3b", {128, 128, 192, 32, 96, 64});  // 480
  x = g.max_pool(x, halve, "maxpool3");  // 14x14

  x = blocks.googlenet_inception(x, "inception4a", {192, 96, 208, 16, 48, 64});  // 512
  x = blocks.googlenet_inception(x, "inception4b", {160, 112, 224, 24, 64, 64});  // 512
  x = blocks.googlenet_inception(x, "inception4c", {128, 128, 256, 24, 64, 64});  // 512
  x = blocks.googlenet_inception(x, "inception4d", {112, 144, 288, 32, 64, 64});  // 528
  x = blocks.googlenet_inception(x, "inception4e", {256, 160, 320, 32, 128, 128});  // 832
  x = g.max_pool(x, {.kernel = 2, .stride = 2, .ceil_mode = true}, "maxpool4");  // 7x7

  x = blocks.googlenet_inception(x, "inception5a", {256, 160, 320, 32, 128, 128});  // 832
  x = blocks.googlenet_inception(x, "inception5b", {384, 192, 384, 48, 128, 128});  // 1024

  x = g.global_avg_pool(x, "avgpool");  // torchvision's AdaptiveAvgPool2d((1, 1))
  x = g.flatten(x, "flatten");
  x = g.dropout(x, {.p = 0.2f}, "dropout");
  const Value logits = g.linear(x, {.out_features = 1000}, "fc");
  const Value loss = g.softmax_cross_entropy(logits, labels);
  return std::move(g).build(loss);
}

}  // namespace glassbox
