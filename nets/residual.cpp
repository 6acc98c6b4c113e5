// nets/residual.cpp: residual blocks (see nets/residual.h).
#include "nets/residual.h"

#include "layers/subsample_pad.h"

namespace glassbox::residual {
namespace {

// x itself where the block keeps the shape, otherwise the chosen shortcut.
// Called after the block's main path, so the graph lists the shortcut's
// layers where torchvision's module order has them: after the last bn.
Value shortcut_of(GraphBuilder& g, Value x, const std::string& block, int channels, int stride, Shortcut kind) {
  const int64_t in_channels = g.shape(x)[1];
  if (stride == 1 && in_channels == channels) return x;
  if (kind == Shortcut::kProjection) {
    return conv_bn(g, x, block + ".downsample.0", block + ".downsample.1",
                   {.out_channels = channels, .kernel = 1, .stride = stride});
  }
  // Note [Centred zero channels]: the common PyTorch CIFAR ResNets pad with
  // F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, planes // 4, planes // 4)): half the
  // new channels before x's, half after. Trained weights expect x's channels
  // where that put them, so this does the same.
  const SubsamplePad::Options options = {
      .stride = stride, .out_channels = channels, .first_channel = static_cast<int>((channels - in_channels) / 2)};
  return g.append(std::make_unique<SubsamplePad>(block + ".shortcut", options), {x});
}

}  // namespace

Value conv_bn(GraphBuilder& g, Value x, const std::string& conv, const std::string& bn, Conv2d::Options options) {
  options.bias = false;  // the batch norm's shift is the bias
  return g.batch_norm(g.conv(x, options, conv), {}, bn);
}

Value basic_block(GraphBuilder& g, Value x, const std::string& name, int planes, int stride, Shortcut shortcut) {
  Value out = conv_bn(g, x, name + ".conv1", name + ".bn1",
                      {.out_channels = planes, .kernel = 3, .stride = stride, .pad = 1});
  out = g.relu(out, name + ".relu1");
  out = conv_bn(g, out, name + ".conv2", name + ".bn2", {.out_channels = planes, .kernel = 3, .pad = 1});
  const Value identity = shortcut_of(g, x, name, planes, stride, shortcut);
  return g.relu(g.add({out, identity}, name + ".add"), name + ".relu2");
}

Value bottleneck_block(GraphBuilder& g, Value x, const std::string& name, int planes, int stride) {
  Value out = g.relu(conv_bn(g, x, name + ".conv1", name + ".bn1", {.out_channels = planes, .kernel = 1}),
                     name + ".relu1");
  out = conv_bn(g, out, name + ".conv2", name + ".bn2",
                {.out_channels = planes, .kernel = 3, .stride = stride, .pad = 1});
  out = g.relu(out, name + ".relu2");
  out = conv_bn(g, out, name + ".conv3", name + ".bn3", {.out_channels = 4 * planes, .kernel = 1});
  const Value identity = shortcut_of(g, x, name, 4 * planes, stride, Shortcut::kProjection);
  return g.relu(g.add({out, identity}, name + ".add"), name + ".relu3");
}

}  // namespace glassbox::residual
