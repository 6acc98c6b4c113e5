"""bench/peers/peer_custom_models.py: the peer's networks that torchvision does
not have, defined from their papers' (or reference code's) layer tables.

  LeNet     LeNet-5 for 28x28 grey images, ReLU and max pooling (as nets/lenet.cpp)
  Overfeat  OverFeat "fast", 231x231, as convnet-benchmarks times it (no dropout:
            its definition has the dropout layers commented out)
  ResNet56  CIFAR ResNet-56 (He et al. 2016, section 4.2), option A shortcuts
  Xception  Chollet 2017, the layout of Cadene's pretrainedmodels xception
  FCN5      784-4096-2048-1024-10, no bias, ReLU (the "FCN-5" of the DL-tool
            benchmarks), on (1,28,28) images flattened

Module names follow the papers' or the reference code's, as Glassbox's do.
Each builder returns a torch.nn.Module on the current default device.
"""

from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F


def lenet():
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
        nn.Conv2d(6, 16, 5), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(inplace=True),
        nn.Linear(120, 84), nn.ReLU(inplace=True),
        nn.Linear(84, 10))


def overfeat():
    """231 -> conv1 56 -> pool1 28 -> conv2 24 -> pool2 12 -> conv3..5 12 -> pool5 6."""
    def conv(cin, cout, kernel, stride=1, padding=0):
        return [nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding), nn.ReLU(inplace=True)]
    features = nn.Sequential(
        *conv(3, 96, 11, stride=4), nn.MaxPool2d(2, 2),
        *conv(96, 256, 5), nn.MaxPool2d(2, 2),
        *conv(256, 512, 3, padding=1),
        *conv(512, 1024, 3, padding=1),
        *conv(1024, 1024, 3, padding=1), nn.MaxPool2d(2, 2))
    classifier = nn.Sequential(
        nn.Flatten(),
        nn.Linear(1024 * 6 * 6, 3072), nn.ReLU(inplace=True),
        nn.Linear(3072, 4096), nn.ReLU(inplace=True),
        nn.Linear(4096, 1000))
    return nn.Sequential(OrderedDict(features=features, classifier=classifier))


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
    """32 -> layer1 32 (16 ch) -> layer2 16 (32 ch) -> layer3 8 (64 ch) -> global average -> fc."""

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
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)), inplace=True)
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


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
        if out_channels != in_channels or stride != 1:
            self.skip = nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False)
            self.skipbn = nn.BatchNorm2d(out_channels)
        else:
            self.skip = None
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


def fcn5():
    return nn.Sequential(OrderedDict([
        ("flatten", nn.Flatten()),
        ("fc1", nn.Linear(784, 4096, bias=False)), ("relu1", nn.ReLU(inplace=True)),
        ("fc2", nn.Linear(4096, 2048, bias=False)), ("relu2", nn.ReLU(inplace=True)),
        ("fc3", nn.Linear(2048, 1024, bias=False)), ("relu3", nn.ReLU(inplace=True)),
        ("fc4", nn.Linear(1024, 10, bias=False))]))
