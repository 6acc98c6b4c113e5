// nets/inception_v3.cpp: Inception-v3 (Szegedy et al., "Rethinking the
// Inception Architecture for Computer Vision", 2015) exactly as torchvision
// builds it, without the auxiliary head (torchvision's aux_logits=False) and
// without transform_input. Input (N, 3, 299, 299). 23,834,568 parameters,
// 5.713 GMAC per image. Every convolution is a BasicConv2d (no bias, batch
// norm eps 0.001, ReLU); the blocks are in nets/inception_blocks.cpp. Max
// pools round down; the blocks' 3x3 average pools (stride 1, pad 1) count the
// padding, as torchvision's F.avg_pool2d does by default.
#include "nets/inception_blocks.h"
#include "nets/nets.h"

namespace glassbox {

Graph inception_v3(int batch) {
  GraphBuilder g;
  const InceptionBlocks blocks(g);
  Value x = g.input("images", {batch, 3, 299, 299});
  const Value labels = g.input("labels", {batch}, DType::kInt32);

  x = blocks.basic_conv(x, "Conv2d_1a_3x3", {.out_channels = 32, .kernel = 3, .stride = 2});  // 149x149
  x = blocks.basic_conv(x, "Conv2d_2a_3x3", {.out_channels = 32, .kernel = 3});               // 147x147
  x = blocks.basic_conv(x, "Conv2d_2b_3x3", {.out_channels = 64, .kernel = 3, .pad = 1});
  x = g.max_pool(x, {.kernel = 3, .stride = 2}, "maxpool1");  // 73x73
  x = blocks.basic_conv(x, "Conv2d_3b_1x1", {.out_channels = 80, .kernel = 1});
  x = blocks.basic_conv(x, "Conv2d_4a_3x3", {.out_channels = 192, .kernel = 3});  // 71x71
  x = g.max_pool(x, {.kernel = 3, .stride = 2}, "maxpool2");                      // 35x35

  x = blocks.inception_a(x, "Mixed_5b", /*pool_features=*/32);  // 256 channels
  x = blocks.inception_a(x, "Mixed_5c", /*pool_features=*/64);  // 288
  x = blocks.inception_a(x, "Mixed_5d", /*pool_features=*/64);  // 288
  x = blocks.inception_b(x, "Mixed_6a");                        // 768 x 17x17
  x = blocks.inception_c(x, "Mixed_6b", /*channels_7x7=*/128);
  x = blocks.inception_c(x, "Mixed_6c", /*channels_7x7=*/160);
  x = blocks.inception_c(x, "Mixed_6d", /*channels_7x7=*/160);
  x = blocks.inception_c(x, "Mixed_6e", /*channels_7x7=*/192);  // 768 (the auxiliary head would branch here)
  x = blocks.inception_d(x, "Mixed_7a");                        // 1280 x 8x8
  x = blocks.inception_e(x, "Mixed_7b");                        // 2048
  x = blocks.inception_e(x, "Mixed_7c");                        // 2048

  x = g.global_avg_pool(x, "avgpool");  // torchvision's AdaptiveAvgPool2d((1, 1))
  x = g.dropout(x, {.p = 0.5f}, "dropout");
  x = g.flatten(x, "flatten");
  const Value logits = g.linear(x, {.out_features = 1000}, "fc");
  const Value loss = g.softmax_cross_entropy(logits, labels);
  return std::move(g).build(loss);
}

}  // namespace glassbox
