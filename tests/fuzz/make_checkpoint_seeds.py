#!/usr/bin/env python3
"""tests/fuzz/make_checkpoint_seeds.py: writes the seeds of fuzz_checkpoint_dir
under tests/fuzz/corpus/fuzz_checkpoint_dir/: a checkpoint of the target's
tiny network as save_checkpoint writes it (train/checkpoint.h), and copies of
it each broken in one way a loader must refuse. The committed seeds are its
output; run it again after editing the list. Python 3 alone (no torch).

    python3 tests/fuzz/make_checkpoint_seeds.py

A seed is the target's input (tests/fuzz/fuzz_checkpoint_dir.cpp): the model
file's and the train file's lengths as 2-byte little-endian numbers, the two
files, then `latest`.
"""

import json
import math
import os
import random
import struct

from seed_files import report, write_seeds

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fuzz_checkpoint_dir")

RUN_ID = "0123456789abcdef"
STEP = 12

# The target's network under PyTorch's names (nets/torch_names.h: Glassbox's
# layer names, batch norm's scale and shift as weight and bias), in
# state_dict order: (name, shape, kind). Kinds: a parameter (which also has a
# momentum buffer), a running mean, a running variance, the batch count.
NETWORK = [
    ("conv1.weight", [2, 1, 3, 3], "parameter"),
    ("conv1.bias", [2], "parameter"),
    ("bn1.weight", [2], "parameter"),
    ("bn1.bias", [2], "parameter"),
    ("bn1.running_mean", [2], "mean"),
    ("bn1.running_var", [2], "variance"),
    ("bn1.num_batches_tracked", [], "count"),
    ("fc.weight", [3, 8], "parameter"),
    ("fc.bias", [3], "parameter"),
]


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def safetensors(tensors, metadata):
    """A safetensors file as write_safetensors writes it: tensors = [(name, dtype, shape, bytes)]."""
    header, data = {"__metadata__": metadata}, b""
    for name, dtype, shape, values in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(values)]}
        data += values
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def floats(values):
    return struct.pack(f"<{len(values)}f", *values)


class Checkpoint:
    """Epoch 1 of a run: values drawn from a fixed seed, editable before encoding."""

    def __init__(self):
        rng = random.Random(1)
        self.values = {}  # name -> list of floats (or [count] for the batch count)
        self.momentum = {}
        for name, shape, kind in NETWORK:
            n = numel(shape)
            if kind == "count":
                self.values[name] = [STEP]
            elif kind == "variance":
                self.values[name] = [rng.uniform(0.5, 1.5) for _ in range(n)]
            else:
                self.values[name] = [round(rng.uniform(-0.5, 0.5), 4) for _ in range(n)]
            if kind == "parameter":
                self.momentum[name] = [round(rng.uniform(-0.1, 0.1), 4) for _ in range(n)]
        self.run = {"run_id": RUN_ID, "epoch": "1", "step": str(STEP)}
        self.model_run = dict(self.run)  # the model file's copy, to make the two differ
        self.config = {"config.net": "FuzzTiny", "config.batch": "1", "config.lr": "0.05", "config.seed": "1"}
        self.environment = {"environment.threads": "1", "environment.build": "fuzz"}
        self.shapes = {name: shape for name, shape, _ in NETWORK}
        self.latest = b"epoch-0001\n"

    def model(self):
        tensors = []
        for name, _, kind in NETWORK:
            shape = self.shapes[name]
            if kind == "count":
                tensors.append((name, "I64", shape, struct.pack("<q", self.values[name][0])))
            else:
                tensors.append((name, "F32", shape, floats(self.values[name])))
        return safetensors(tensors, {"format": "pt", "net": "FuzzTiny", **self.model_run})

    def train(self):
        tensors = [("momentum_buffer." + name, "F32", self.shapes[name], floats(values))
                   for name, values in self.momentum.items()]
        return safetensors(tensors, {"format": "pt", "net": "FuzzTiny", **self.run, **self.config, **self.environment})

    def encode(self, model=None, train=None):
        model = self.model() if model is None else model
        train = self.train() if train is None else train
        return struct.pack("<HH", len(model), len(train)) + model + train + self.latest


def edited(edit):
    checkpoint = Checkpoint()
    edit(checkpoint)
    return checkpoint.encode()


def seeds():
    valid = Checkpoint()
    out = {"valid": valid.encode()}

    def other_run(c):
        c.run["run_id"] = "fedcba9876543210"
        c.model_run["run_id"] = RUN_ID
    out["run_ids_differ"] = edited(other_run)
    out["steps_differ"] = edited(lambda c: c.model_run.update(step=str(STEP - 1)))
    out["epoch_not_its_name"] = edited(lambda c: (c.run.update(epoch="2"), c.model_run.update(epoch="2")))
    out["run_id_not_hex"] = edited(lambda c: (c.run.update(run_id="0123456789ABCDEF"),
                                              c.model_run.update(run_id="0123456789ABCDEF")))
    out["nan_weight"] = edited(lambda c: c.values["fc.weight"].__setitem__(5, math.nan))
    out["infinite_momentum"] = edited(lambda c: c.momentum["conv1.bias"].__setitem__(1, -math.inf))
    out["weight_past_limit"] = edited(lambda c: c.values["bn1.weight"].__setitem__(0, 2e19))
    out["negative_variance"] = edited(lambda c: c.values["bn1.running_var"].__setitem__(1, -0.25))
    out["negative_count"] = edited(lambda c: c.values["bn1.num_batches_tracked"].__setitem__(0, -1))
    out["transposed_weight"] = edited(lambda c: c.shapes.__setitem__("fc.weight", [8, 3]))
    out["missing_momentum"] = edited(lambda c: c.momentum.pop("fc.bias"))
    out["latest_other_epoch"] = edited(lambda c: setattr(c, "latest", b"epoch-0002\n"))
    out["latest_no_newline"] = edited(lambda c: setattr(c, "latest", b"epoch-0001"))
    out["latest_not_an_epoch"] = edited(lambda c: setattr(c, "latest", b"../epoch-0001\n"))
    out["model_truncated"] = valid.encode(model=valid.model()[:-7])
    out["input_cut_short"] = valid.encode()[:len(valid.model()) + 200]
    return out


def main():
    write_seeds(OUT, seeds())
    report(OUT)


if __name__ == "__main__":
    main()
