// nets/inception_blocks.h: the blocks of GoogLeNet and Inception-v3 as
// torchvision builds them, shared by nets/googlenet.cpp, nets/inception_v3.cpp
// and tests/test_inception.cpp, which builds a narrow network from the same
// functions to check gradients and training on the real block code.
//
// Every convolution is torchvision's BasicConv2d: a convolution without bias,
// batch norm (eps 0.001) and a ReLU. Names are torchvision's module paths, so
// checkpoints line up; what torchvision does with functions rather than
// modules gets a name after the function:
//   Mixed_5b.branch1x1.conv, Mixed_5b.branch1x1.bn, Mixed_5b.branch1x1.relu
//   Mixed_5b.avg_pool (F.avg_pool2d), Mixed_6a.max_pool (F.max_pool2d)
//   Mixed_5b.concat (torch.cat of the branches), Mixed_7b.branch3x3.concat (InceptionE's inner cat)
#pragma once

#include <string>

#include "graph/builder.h"

namespace glassbox {

// Output channels of GoogLeNet's Inception block, as torchvision's Inception()
// takes them: the columns of the paper's Table 1.
struct GoogLeNetInception {
  int ch1x1;     // #1x1
  int ch3x3red;  // #3x3 reduce
  int ch3x3;     // #3x3
  int ch5x5red;  // #5x5 reduce
  int ch5x5;     // #5x5 (a 3x3 convolution in torchvision, see googlenet_inception)
  int pool_proj;
};

class InceptionBlocks {
 public:
  // Every channel count inside the blocks is divided by width_divisor (at
  // least 1 channel remains): 1 builds the real networks, tests build narrow
  // ones. Throws ConfigError unless width_divisor >= 1.
  explicit InceptionBlocks(GraphBuilder& g, int width_divisor = 1);

  // BasicConv2d: name.conv (no bias: the batch norm's shift is the bias),
  // name.bn, name.relu. The channels are taken as given (stems).
  Value basic_conv(Value x, const std::string& name, Conv2d::Options options) const;

  // GoogLeNet (Szegedy et al., 2014), torchvision's Inception: 1x1 | 1x1, 3x3 |
  // 1x1, 3x3 | 3x3 max pool s1 p1, 1x1; concatenated. Keeps the plane size.
  Value googlenet_inception(Value x, const std::string& name, GoogLeNetInception channels) const;

  // Inception-v3 (Szegedy et al., "Rethinking the Inception Architecture",
  // 2015), torchvision's InceptionA..E (after TF-slim's Mixed_* blocks).
  // 35x35 grid (Figure 5's module, with a 5x5 branch kept): 224 + pool_features channels out.
  Value inception_a(Value x, const std::string& name, int pool_features) const;
  // Grid reduction 35 -> 17 (Figure 10's idea): convolutions and a max pool with stride 2.
  Value inception_b(Value x, const std::string& name) const;
  // 17x17 grid with 7x7 convolutions factorised into 1x7 and 7x1 (Figure 6, n = 7): 768 out.
  Value inception_c(Value x, const std::string& name, int channels_7x7) const;
  // Grid reduction 17 -> 8.
  Value inception_d(Value x, const std::string& name) const;
  // 8x8 grid with the filter bank expanded into parallel 1x3 and 3x1 (Figure 7): 2048 out.
  Value inception_e(Value x, const std::string& name) const;

 private:
  // A BasicConv2d inside a block: out_channels as torchvision writes them,
  // divided by the width divisor.
  Value conv(Value x, const std::string& name, Conv2d::Options options) const;

  GraphBuilder& g_;
  int width_divisor_;
};

}  // namespace glassbox
