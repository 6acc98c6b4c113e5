// nets/inception_blocks.cpp: GoogLeNet's and Inception-v3's blocks, branch by
// branch in torchvision's order (the order of the concatenated channels).
#include "nets/inception_blocks.h"

#include <algorithm>

namespace glassbox {

InceptionBlocks::InceptionBlocks(GraphBuilder& g, int width_divisor) : g_(g), width_divisor_(width_divisor) {
  if (width_divisor < 1) {
    throw ConfigError(cat("Inception blocks: width divisor must be 1 or more, got ", width_divisor));
  }
}

Value InceptionBlocks::basic_conv(Value x, const std::string& name, Conv2d::Options options) const {
  options.bias = false;
  x = g_.conv(x, options, name + ".conv");
  x = g_.batch_norm(x, {.eps = 1e-3f}, name + ".bn");
  return g_.relu(x, name + ".relu");
}

Value InceptionBlocks::conv(Value x, const std::string& name, Conv2d::Options options) const {
  options.out_channels = std::max(1, options.out_channels / width_divisor_);
  return basic_conv(x, name, options);
}

Value InceptionBlocks::googlenet_inception(Value x, const std::string& name, GoogLeNetInception c) const {
  const Value branch1 = conv(x, name + ".branch1", {.out_channels = c.ch1x1, .kernel = 1});

  Value branch2 = conv(x, name + ".branch2.0", {.out_channels = c.ch3x3red, .kernel = 1});
  branch2 = conv(branch2, name + ".branch2.1", {.out_channels = c.ch3x3, .kernel = 3, .pad = 1});

  // The paper's 5x5 branch; torchvision's has a 3x3 convolution (a slip kept
  // for its trained weights, pytorch/vision#906). We follow torchvision, so
  // the counts match its 6,624,904 parameters and checkpoints load.
  Value branch3 = conv(x, name + ".branch3.0", {.out_channels = c.ch5x5red, .kernel = 1});
  branch3 = conv(branch3, name + ".branch3.1", {.out_channels = c.ch5x5, .kernel = 3, .pad = 1});

  Value branch4 = g_.max_pool(x, {.kernel = 3, .stride = 1, .pad = 1, .ceil_mode = true}, name + ".branch4.0");
  branch4 = conv(branch4, name + ".branch4.1", {.out_channels = c.pool_proj, .kernel = 1});

  return g_.concat({branch1, branch2, branch3, branch4}, name + ".concat");
}

Value InceptionBlocks::inception_a(Value x, const std::string& name, int pool_features) const {
  const Value branch1x1 = conv(x, name + ".branch1x1", {.out_channels = 64, .kernel = 1});

  Value branch5x5 = conv(x, name + ".branch5x5_1", {.out_channels = 48, .kernel = 1});
  branch5x5 = conv(branch5x5, name + ".branch5x5_2", {.out_channels = 64, .kernel = 5, .pad = 2});

  Value branch3x3dbl = conv(x, name + ".branch3x3dbl_1", {.out_channels = 64, .kernel = 1});
  branch3x3dbl = conv(branch3x3dbl, name + ".branch3x3dbl_2", {.out_channels = 96, .kernel = 3, .pad = 1});
  branch3x3dbl = conv(branch3x3dbl, name + ".branch3x3dbl_3", {.out_channels = 96, .kernel = 3, .pad = 1});

  // count_include_pad=True, as Glassbox's average pooling always does.
  Value branch_pool = g_.avg_pool(x, {.kernel = 3, .stride = 1, .pad = 1}, name + ".avg_pool");
  branch_pool = conv(branch_pool, name + ".branch_pool", {.out_channels = pool_features, .kernel = 1});

  return g_.concat({branch1x1, branch5x5, branch3x3dbl, branch_pool}, name + ".concat");
}

Value InceptionBlocks::inception_b(Value x, const std::string& name) const {
  const Value branch3x3 = conv(x, name + ".branch3x3", {.out_channels = 384, .kernel = 3, .stride = 2});

  Value branch3x3dbl = conv(x, name + ".branch3x3dbl_1", {.out_channels = 64, .kernel = 1});
  branch3x3dbl = conv(branch3x3dbl, name + ".branch3x3dbl_2", {.out_channels = 96, .kernel = 3, .pad = 1});
  branch3x3dbl = conv(branch3x3dbl, name + ".branch3x3dbl_3", {.out_channels = 96, .kernel = 3, .stride = 2});

  const Value branch_pool = g_.max_pool(x, {.kernel = 3, .stride = 2}, name + ".max_pool");

  return g_.concat({branch3x3, branch3x3dbl, branch_pool}, name + ".concat");
}

Value InceptionBlocks::inception_c(Value x, const std::string& name, int channels_7x7) const {
  const int c7 = channels_7x7;
  const Conv2d::Options k1x7{.out_channels = c7, .kernel = {1, 7}, .pad = {0, 3}};
  const Conv2d::Options k7x1{.out_channels = c7, .kernel = {7, 1}, .pad = {3, 0}};
  auto to192 = [](Conv2d::Options o) {  // the last convolution of a branch widens to 192
    o.out_channels = 192;
    return o;
  };

  const Value branch1x1 = conv(x, name + ".branch1x1", {.out_channels = 192, .kernel = 1});

  Value branch7x7 = conv(x, name + ".branch7x7_1", {.out_channels = c7, .kernel = 1});
  branch7x7 = conv(branch7x7, name + ".branch7x7_2", k1x7);
  branch7x7 = conv(branch7x7, name + ".branch7x7_3", to192(k7x1));

  Value branch7x7dbl = conv(x, name + ".branch7x7dbl_1", {.out_channels = c7, .kernel = 1});
  branch7x7dbl = conv(branch7x7dbl, name + ".branch7x7dbl_2", k7x1);
  branch7x7dbl = conv(branch7x7dbl, name + ".branch7x7dbl_3", k1x7);
  branch7x7dbl = conv(branch7x7dbl, name + ".branch7x7dbl_4", k7x1);
  branch7x7dbl = conv(branch7x7dbl, name + ".branch7x7dbl_5", to192(k1x7));

  Value branch_pool = g_.avg_pool(x, {.kernel = 3, .stride = 1, .pad = 1}, name + ".avg_pool");
  branch_pool = conv(branch_pool, name + ".branch_pool", {.out_channels = 192, .kernel = 1});

  return g_.concat({branch1x1, branch7x7, branch7x7dbl, branch_pool}, name + ".concat");
}

Value InceptionBlocks::inception_d(Value x, const std::string& name) const {
  Value branch3x3 = conv(x, name + ".branch3x3_1", {.out_channels = 192, .kernel = 1});
  branch3x3 = conv(branch3x3, name + ".branch3x3_2", {.out_channels = 320, .kernel = 3, .stride = 2});

  Value branch7x7x3 = conv(x, name + ".branch7x7x3_1", {.out_channels = 192, .kernel = 1});
  branch7x7x3 = conv(branch7x7x3, name + ".branch7x7x3_2", {.out_channels = 192, .kernel = {1, 7}, .pad = {0, 3}});
  branch7x7x3 = conv(branch7x7x3, name + ".branch7x7x3_3", {.out_channels = 192, .kernel = {7, 1}, .pad = {3, 0}});
  branch7x7x3 = conv(branch7x7x3, name + ".branch7x7x3_4", {.out_channels = 192, .kernel = 3, .stride = 2});

  const Value branch_pool = g_.max_pool(x, {.kernel = 3, .stride = 2}, name + ".max_pool");

  return g_.concat({branch3x3, branch7x7x3, branch_pool}, name + ".concat");
}

Value InceptionBlocks::inception_e(Value x, const std::string& name) const {
  const Conv2d::Options k1x3{.out_channels = 384, .kernel = {1, 3}, .pad = {0, 1}};
  const Conv2d::Options k3x1{.out_channels = 384, .kernel = {3, 1}, .pad = {1, 0}};

  const Value branch1x1 = conv(x, name + ".branch1x1", {.out_channels = 320, .kernel = 1});

  // One 1x1 feeds a 1x3 and a 3x1 side by side; their outputs are concatenated
  // inside the branch (torchvision's inner torch.cat), then with the others.
  const Value branch3x3_1 = conv(x, name + ".branch3x3_1", {.out_channels = 384, .kernel = 1});
  const Value branch3x3 = g_.concat(
      {conv(branch3x3_1, name + ".branch3x3_2a", k1x3), conv(branch3x3_1, name + ".branch3x3_2b", k3x1)},
      name + ".branch3x3.concat");

  Value branch3x3dbl = conv(x, name + ".branch3x3dbl_1", {.out_channels = 448, .kernel = 1});
  branch3x3dbl = conv(branch3x3dbl, name + ".branch3x3dbl_2", {.out_channels = 384, .kernel = 3, .pad = 1});
  branch3x3dbl = g_.concat(
      {conv(branch3x3dbl, name + ".branch3x3dbl_3a", k1x3), conv(branch3x3dbl, name + ".branch3x3dbl_3b", k3x1)},
      name + ".branch3x3dbl.concat");

  Value branch_pool = g_.avg_pool(x, {.kernel = 3, .stride = 1, .pad = 1}, name + ".avg_pool");
  branch_pool = conv(branch_pool, name + ".branch_pool", {.out_channels = 192, .kernel = 1});

  return g_.concat({branch1x1, branch3x3, branch3x3dbl, branch_pool}, name + ".concat");
}

}  // namespace glassbox
