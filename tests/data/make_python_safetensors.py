#!/usr/bin/env python3
"""tests/data/make_python_safetensors.py: writes tests/data/python.safetensors
with Python's safetensors package, for tests/test_safetensors.cpp to read
(and to write again, byte for byte) without Python.

    python3 tests/data/make_python_safetensors.py

The tensors cover what a PyTorch state_dict holds (float32 weights, an int64
scalar num_batches_tracked) and the corners of the format: a float16 tensor,
bytes whose length is not a multiple of 4, a tensor with no elements.
safetensors orders them by dtype size, then name, and pads the header with
spaces to a multiple of 8 bytes.
"""

import os

import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))

tensors = {
    "conv.weight": torch.arange(24, dtype=torch.float32).reshape(2, 3, 2, 2) / 8 - 1,  # -1, -0.875, ..., 1.875
    "bn.num_batches_tracked": torch.tensor(7, dtype=torch.int64),
    "half": torch.tensor([1.5, -2.0, 65504.0], dtype=torch.float16),
    "bytes": torch.arange(5, dtype=torch.uint8),
    "empty": torch.zeros(0, 3),
}
save_file(tensors, os.path.join(HERE, "python.safetensors"),
          metadata={"format": "pt", "made_by": "tests/data/make_python_safetensors.py"})
