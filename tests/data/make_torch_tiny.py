#!/usr/bin/env python3
"""tests/data/make_torch_tiny.py: a small PyTorch model's state_dict and its
eval-mode logits, for tests/test_checkpoint.cpp to load into the same
network built by Glassbox and compare, without torch in CI.

    python3 tests/data/make_torch_tiny.py

The network (Glassbox's layer names, so its keys are Glassbox's):
    conv1 (3 filters 3x3, pad 1) bn1 relu1 pool1 (2x2) flatten drop1 fc (27 -> 4)
on (2, 1, 6, 6) images. Batch norm's weight, bias and running statistics are
random (not 1, 0, 0, 1), so a slip in their names or order shows.
Writes torch_tiny.safetensors (the state_dict, as safetensors.torch.save_file
writes it) and torch_tiny_io.safetensors ("images" and the eval-mode "logits").
"""

import os
from collections import OrderedDict

import torch
import torch.nn as nn
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))

torch.manual_seed(2024)
model = nn.Sequential(OrderedDict([
    ("conv1", nn.Conv2d(1, 3, 3, padding=1)), ("bn1", nn.BatchNorm2d(3)), ("relu1", nn.ReLU()),
    ("pool1", nn.MaxPool2d(2, 2)), ("flatten", nn.Flatten()), ("drop1", nn.Dropout(0.5)),
    ("fc", nn.Linear(27, 4))]))
with torch.no_grad():
    model.bn1.weight.uniform_(0.5, 1.5)
    model.bn1.bias.uniform_(-0.5, 0.5)
    model.bn1.running_mean.uniform_(-0.3, 0.3)
    model.bn1.running_var.uniform_(0.5, 2.0)
    model.bn1.num_batches_tracked.fill_(17)
model.eval()
images = torch.randn(2, 1, 6, 6)
with torch.no_grad():
    logits = model(images)
save_file(model.state_dict(), os.path.join(HERE, "torch_tiny.safetensors"), metadata={"format": "pt"})
save_file({"images": images, "logits": logits}, os.path.join(HERE, "torch_tiny_io.safetensors"))
print(logits)
