"""bench/peers/peer_custom_models.py: the peer's networks that torchvision does
not have, defined from their papers' (or reference code's) layer tables.

  LeNet     LeNet-5 for 28x28 grey images, ReLU and max pooling (as nets/lenet.cpp)
  Overfeat  OverFeat "fast", 231x231, as convnet-benchmarks times it (no dropout:
            its definition has the dropout layers commented out)
  ResNet56  CIFAR ResNet-56 (He et al. 2016, section 4.2), option A shortcuts
  Xception  Chollet 2017, the layout of Cadene's pretrainedmodels xception
  FCN5      784-4096-2048-1024-10, no bias, ReLU (the "FCN-5" of the DL-tool
            benchmarks), on (1,28,28) images flattened
  mlp       any multilayer perceptron as MLP:<sizes> names it (FCN5 is one)

Module names are Glassbox's layer names (nets/*.cpp), so that each model's
state_dict keys are exactly those of a Glassbox checkpoint (nets/torch_names.h,
docs/checkpoints.md): a checkpoint loads with load_state_dict(strict=True),
and tests/data/torch_keys/ (bench/peers/torch_state_keys.py) holds each
model's keys for tests/test_torch_names.cpp to compare with. Modules are
registered in Glassbox's graph order, which is the state_dict's order.
Each builder returns a torch.nn.Module on the current default device.
"""

from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F


def lenet():
    """Named as nets/lenet.cpp: conv1 relu1 pool1 conv2 relu2 pool2 flatten fc3 relu3 fc4 relu4 fc5."""
    return nn.Sequential(OrderedDict([
        ("conv1", nn.Conv2d(1, 6, 5, padding=2)), ("relu1", nn.ReLU(inplace=True)), ("pool1", nn.MaxPool2d(2, 2)),
        ("conv2", nn.Conv2d(6, 16, 5)), ("relu2", nn.ReLU(inplace=True)), ("pool2", nn.MaxPool2d(2, 2)),
        ("flatten", nn.Flatten()),
        ("fc3", nn.Linear(16 * 5 * 5, 120)), ("relu3", nn.ReLU(inplace=True)),
        ("fc4", nn.Linear(120, 84)), ("relu4", nn.ReLU(inplace=True)),
        ("fc5", nn.Linear(84, 10))]))


def overfeat():
    """231 -> conv1 56 -> pool1 28 -> conv2 24 -> pool2 12 -> conv3..5 12 -> pool5 6; named as nets/overfeat.cpp."""
    def conv(i, cin, cout, kernel, stride=1, padding=0):
        return [(f"conv{i}", nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding)),
                (f"relu{i}", nn.ReLU(inplace=True))]

    def linear(i, fin, fout):
        return [(f"fc{i}", nn.Linear(fin, fout)), (f"relu{i}", nn.ReLU(inplace=True))]
    return nn.Sequential(OrderedDict([
        *conv(1, 3, 96, 11, stride=4), ("pool1", nn.MaxPool2d(2, 2)),
        *conv(2, 96, 256, 5), ("pool2", nn.MaxPool2d(2, 2)),
        *conv(3, 256, 512, 3, padding=1),
        *conv(4, 512, 1024, 3, padding=1),
        *conv(5, 1024, 1024, 3, padding=1), ("pool5", nn.MaxPool2d(2, 2)),
        ("flatten", nn.Flatten()),
        *linear(6, 1024 * 6 * 6, 3072),
        *linear(7, 3072, 4096),
        ("fc8", nn.Linear(4096, 1000))]))


class CifarBasicBlock(nn.Module):
    """Two 3x3 convolutions; where the block halves the size and doubles the
    channels, the shortcut is option A: every second pixel, and the new
    channels zero (no parameters), half before x's channels and half after,
    as Glassbox's ResNet56 places them (nets/residual.cpp, Note [Centred zero
    channels]: the layout of the widely used CIFAR weights)."""

    def __init__(self, in_planes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.stride = stride
        self.extra_channels = planes - in_planes

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.bn2(self.conv2(out))
        shortcut = x
        if self.stride != 1:
            shortcut = shortcut[:, :, ::self.stride, ::self.stride]
        if self.extra_channels:
            before = self.extra_channels // 2
            shortcut = F.pad(shortcut, (0, 0, 0, 0, before, self.extra_channels - before))
        return F.relu(out + shortcut, inplace=True)


class CifarResNet(nn.Module):
    """32 -> layer1 32 (16 ch) -> layer2 16 (32 ch) -> layer3 8 (64 ch) -> global average -> linear
    (the classifier's name in nets/resnet_cifar.cpp and in the common CIFAR weights)."""

    def __init__(self, blocks_per_stage, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        stages, in_planes = [], 16
        for planes, stride in ((16, 1), (32, 2), (64, 2)):
            blocks = [CifarBasicBlock(in_planes, planes, stride)]
            blocks += [CifarBasicBlock(planes, planes, 1) for _ in range(blocks_per_stage - 1)]
            stages.append(nn.Sequential(*blocks))
            in_planes = planes
        self.layer1, self.layer2, self.layer3 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.linear = nn.Linear(64, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)), inplace=True)
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.linear(torch.flatten(self.avgpool(x), 1))


def resnet56():
    return CifarResNet(blocks_per_stage=9)  # 6n + 2 = 56 layers with weights, n = 9


class SeparableConv2d(nn.Module):
    """A depthwise 3x3 (one filter per channel: groups = channels) then a
    pointwise 1x1 across channels; no bias (batch norm follows)."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, in_channels, 3, padding=1, groups=in_channels, bias=False)
        self.pointwise = nn.Conv2d(in_channels, out_channels, 1, bias=False)

    def forward(self, x):
        return self.pointwise(self.conv1(x))


class XceptionBlock(nn.Module):
    """`reps` x (ReLU, separable conv, batch norm), then a 3x3 stride-2 max
    pool where the block downsamples; the shortcut is a strided 1x1 conv +
    batch norm where the shape changes, the identity otherwise. grow_first:
    the first separable conv changes the channels (else the last does)."""

    def __init__(self, in_channels, out_channels, reps, stride, start_with_relu, grow_first=True):
        super().__init__()
        widths = [in_channels] + [out_channels if grow_first else in_channels] * (reps - 1) + [out_channels]
        layers = []
        for i in range(reps):
            # The first ReLU must not overwrite the block's input: the shortcut reads it.
            layers += [nn.ReLU(inplace=i > 0), SeparableConv2d(widths[i], widths[i + 1]),
                       nn.BatchNorm2d(widths[i + 1])]
        if not start_with_relu:
            layers = layers[1:]
        if stride != 1:
            layers.append(nn.MaxPool2d(3, stride, 1))
        self.rep = nn.Sequential(*layers)
        # Registered after rep, as Glassbox's graph has them (nets/xception.cpp),
        # so that the state_dict lists them in the same order; Cadene's port
        # registers skip first, which changes no name and no computation.
        if out_channels != in_channels or stride != 1:
            self.skip = nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False)
            self.skipbn = nn.BatchNorm2d(out_channels)
        else:
            self.skip = None

    def forward(self, x):
        shortcut = self.skipbn(self.skip(x)) if self.skip is not None else x
        # In place, as the reference does: batch norm's and max pooling's
        # backward read their inputs, not this output.
        return self.rep(x).add_(shortcut)


class Xception(nn.Module):
    """299 -> conv1 149 -> conv2 147 -> block1 74 -> block2 37 -> block3 19
    (entry flow) -> block4..11 19 (middle flow, 728 ch) -> block12 10 ->
    conv3 1536, conv4 2048 (exit flow) -> global average -> fc."""

    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, stride=2, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, bias=False)
        self.bn2 = nn.BatchNorm2d(64)
        self.block1 = XceptionBlock(64, 128, 2, 2, start_with_relu=False)
        self.block2 = XceptionBlock(128, 256, 2, 2, start_with_relu=True)
        self.block3 = XceptionBlock(256, 728, 2, 2, start_with_relu=True)
        for i in range(4, 12):
            setattr(self, f"block{i}", XceptionBlock(728, 728, 3, 1, start_with_relu=True))
        self.block12 = XceptionBlock(728, 1024, 2, 2, start_with_relu=True, grow_first=False)
        self.conv3 = SeparableConv2d(1024, 1536)
        self.bn3 = nn.BatchNorm2d(1536)
        self.conv4 = SeparableConv2d(1536, 2048)
        self.bn4 = nn.BatchNorm2d(2048)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)), inplace=True)
        x = F.relu(self.bn2(self.conv2(x)), inplace=True)
        for i in range(1, 13):
            x = getattr(self, f"block{i}")(x)
        x = F.relu(self.bn3(self.conv3(x)), inplace=True)
        x = F.relu(self.bn4(self.conv4(x)), inplace=True)
        return self.fc(torch.flatten(self.avgpool(x), 1))


def xception():
    return Xception()


def mlp(sizes, bias=True):
    """A multilayer perceptron as nets/mlp.cpp builds it (and MLP:<sizes> names
    it): flatten, then fc1, relu1, fc2, ... with no ReLU after the last."""
    layers = [("flatten", nn.Flatten())]
    for i in range(1, len(sizes)):
        layers.append((f"fc{i}", nn.Linear(sizes[i - 1], sizes[i], bias=bias)))
        if i < len(sizes) - 1:
            layers.append((f"relu{i}", nn.ReLU(inplace=True)))
    return nn.Sequential(OrderedDict(layers))


def fcn5():
    return mlp([784, 4096, 2048, 1024, 10], bias=False)
