// nets/xception.cpp: Xception (Chollet, 2017), "Deep Learning with Depthwise
// Separable Convolutions", as the PyTorch port in Cadene's pretrainedmodels
// builds it (the one whose weights timm and others load), 299x299, 1000 classes.
//
// Layer names are that port's module paths, so its checkpoints map one to one:
//   conv1 bn1 relu1 conv2 bn2 relu2               stem: 3x3 s2 (no padding), 3x3
//   block1 .. block12                             residual blocks: block<i>.rep.<j> is the
//                                                 j-th module of the block's Sequential
//                                                 (ReLU, SeparableConv2d, BatchNorm2d, MaxPool2d),
//                                                 block<i>.skip / .skipbn the 1x1 strided shortcut
//   conv3 bn3 relu3 conv4 bn4 relu4 avgpool fc    exit flow and classifier
// A separable convolution <name> is <name>.conv1 (depthwise 3x3, pad 1,
// groups = channels) then <name>.pointwise (1x1); neither has a bias (the batch
// norm after it shifts). The port calls the classifier fc and renames it
// last_linear when it loads ImageNet weights; here it is fc. Names the port
// does not have: relu4 and avgpool (functional calls there), flatten, and
// block<i>.add, the residual sum (PyTorch's `x += skip`).
//
// Batch norm keeps PyTorch's defaults (eps 1e-5, momentum 0.1); Keras'
// Xception uses eps 1e-3 and a slower running average, with the same
// parameters. Keras pads its pools asymmetrically ("same"); the port pads 1 on
// every side, which gives the same shapes: 147 -> 74 -> 37 -> 19 -> 10.
#include <string>

#include "graph/builder.h"
#include "nets/nets.h"

namespace glassbox {
namespace {

int channels(const GraphBuilder& g, Value x) { return static_cast<int>(g.shape(x)[1]); }

// SeparableConv2d(in, out, 3, 1, 1): depthwise then pointwise, no biases.
Value separable_conv(GraphBuilder& g, Value x, int out_channels, const std::string& name) {
  const int in = channels(g, x);
  x = g.conv(x, {.out_channels = in, .kernel = 3, .pad = 1, .groups = in, .bias = false}, name + ".conv1");
  return g.conv(x, {.out_channels = out_channels, .kernel = 1, .bias = false}, name + ".pointwise");
}

// One residual block, the port's Block(in, out, reps, stride, start_with_relu,
// grow_first): `reps` times (ReLU, separable conv, batch norm), the first ReLU
// left out unless start_with_relu; the channels grow at the first separable
// conv (grow_first) or the last; a 3x3 max pool of stride `stride` (pad 1) at
// the end when stride > 1. The shortcut is the identity, or a 1x1 conv of
// that stride and a batch norm when the shape changes.
struct Block {
  int out;
  int reps;
  int stride;
  bool start_with_relu;
  bool grow_first;
};

Value block(GraphBuilder& g, Value input, const std::string& name, Block b) {
  const int in = channels(g, input);
  int module = 0;  // index into the port's Sequential
  auto rep = [&] { return cat(name, ".rep.", module++); };
  Value x = input;
  for (int i = 0; i < b.reps; ++i) {
    const int width = b.grow_first || i == b.reps - 1 ? b.out : in;
    if (i > 0 || b.start_with_relu) x = g.relu(x, rep());
    x = separable_conv(g, x, width, rep());
    x = g.batch_norm(x, {}, rep());
  }
  if (b.stride != 1) x = g.max_pool(x, {.kernel = 3, .stride = b.stride, .pad = 1}, rep());
  Value skip = input;
  if (b.out != in || b.stride != 1) {
    skip = g.conv(input, {.out_channels = b.out, .kernel = 1, .stride = b.stride, .bias = false}, name + ".skip");
    skip = g.batch_norm(skip, {}, name + ".skipbn");
  }
  return g.add({x, skip}, name + ".add");
}

}  // namespace

Graph xception(int batch, const XceptionSizes& sizes) {
  GraphBuilder g;
  Value x = g.input("images", {batch, 3, sizes.image, sizes.image});
  const Value labels = g.input("labels", {batch}, DType::kInt32);
  // Entry flow. At 299x299: 149, 147, then blocks 1-3: 74, 37, 19.
  x = g.conv(x, {.out_channels = sizes.stem[0], .kernel = 3, .stride = 2, .bias = false}, "conv1");
  x = g.relu(g.batch_norm(x, {}, "bn1"), "relu1");
  x = g.conv(x, {.out_channels = sizes.stem[1], .kernel = 3, .bias = false}, "conv2");
  x = g.relu(g.batch_norm(x, {}, "bn2"), "relu2");
  const bool relu_first[3] = {false, true, true};  // block1 follows relu2
  for (int i = 0; i < 3; ++i) {
    x = block(g, x, cat("block", i + 1),
              {.out = sizes.entry[static_cast<size_t>(i)], .reps = 2, .stride = 2, .start_with_relu = relu_first[i],
               .grow_first = true});
  }
  // Middle flow: identity residuals at 19x19.
  for (int i = 0; i < sizes.middle_blocks; ++i) {
    x = block(g, x, cat("block", 4 + i),
              {.out = sizes.entry[2], .reps = 3, .stride = 1, .start_with_relu = true, .grow_first = true});
  }
  // Exit flow: 19 -> 10, then two separable convs that widen without a shortcut.
  x = block(g, x, cat("block", 4 + sizes.middle_blocks),
            {.out = sizes.exit[0], .reps = 2, .stride = 2, .start_with_relu = true, .grow_first = false});
  x = g.relu(g.batch_norm(separable_conv(g, x, sizes.exit[1], "conv3"), {}, "bn3"), "relu3");
  x = g.relu(g.batch_norm(separable_conv(g, x, sizes.exit[2], "conv4"), {}, "bn4"), "relu4");
  x = g.flatten(g.global_avg_pool(x, "avgpool"), "flatten");
  const Value logits = g.linear(x, {.out_features = sizes.classes}, "fc");
  const Value loss = g.softmax_cross_entropy(logits, labels);
  return std::move(g).build(loss);
}

}  // namespace glassbox
