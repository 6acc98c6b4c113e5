#!/usr/bin/env python3
"""bench/peers/torch_state_keys.py: writes the state_dict of every PyTorch
model that Glassbox names its checkpoints after, as text, for
tests/test_torch_names.cpp to check Glassbox's names against without torch.

For each network of peer_models.py (torchvision's AlexNet, VGG11/13/16/19,
GoogLeNet and InceptionV3 without aux heads, ResNet18..152; the peer's own
LeNet, Overfeat, ResNet56, Xception, FCN5), the LSTM language models
(peer_language_models.py) and a few MLP specs
(peer_custom_models.mlp), tests/data/torch_keys/<NAME>.txt holds

    # NET: <Glassbox's network name>
    # written by bench/peers/torch_state_keys.py with torch <v>, torchvision <v>
    features.0.weight F32 (64, 3, 11, 11)
    features.0.bias F32 (64)
    ...
    bn1.num_batches_tracked I64 ()

one line per state_dict entry, in the state_dict's order: the key, the
safetensors dtype and the shape. Models are built on the meta device (shapes
only: no memory, no arithmetic), so all of them take a few seconds.

    python3 bench/peers/torch_state_keys.py            # write the files
    python3 bench/peers/torch_state_keys.py --check    # compare, exit 1 on a difference

Needs torch and torchvision; the test that reads the files does not.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from peer_models import NETS  # noqa: E402  (after the path is set)

# MLP specs beside the named networks: with biases, as MLP:<sizes> builds them
# (FCN5 is the one without), one with the MNIST input and one with a plain vector.
MLP_SPECS = [[784, 100, 10], [20, 7, 5, 3]]

DTYPES = {"float32": "F32", "int64": "I64"}


def dtype_name(tensor):
    name = str(tensor.dtype).replace("torch.", "")
    if name not in DTYPES:
        raise SystemExit(f"torch_state_keys.py: no safetensors name for {tensor.dtype}")
    return DTYPES[name]


def shape_text(shape):
    return "(" + ", ".join(str(d) for d in shape) + ")"


def models():
    """(file stem, Glassbox network name, builder) for every model."""
    import peer_custom_models
    for spec in NETS:
        yield spec.name, spec.name, spec.build
    from peer_language_models import LANGUAGE_MODELS
    for spec in LANGUAGE_MODELS:
        yield spec.name, spec.name, spec.build
    for sizes in MLP_SPECS:
        name = "MLP:" + ",".join(str(s) for s in sizes)
        yield "MLP-" + "-".join(str(s) for s in sizes), name, lambda sizes=sizes: peer_custom_models.mlp(sizes)


def keys_text(net_name, build):
    import torch
    import torchvision
    with torch.device("meta"):
        model = build()
    lines = [f"# NET: {net_name}",
             f"# written by bench/peers/torch_state_keys.py with torch {torch.__version__}, "
             f"torchvision {torchvision.__version__}"]
    for key, tensor in model.state_dict().items():
        lines.append(f"{key} {dtype_name(tensor)} {shape_text(tensor.shape)}")
    return "\n".join(lines) + "\n"


def entries(text):
    """The lines that are entries (not comments): what --check compares."""
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(REPO, "tests", "data", "torch_keys"),
                        help="folder of the .txt files (default: tests/data/torch_keys)")
    parser.add_argument("--check", action="store_true",
                        help="compare the files with the models instead of writing them; exit 1 on a difference")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    differ = []
    for stem, net_name, build in models():
        text = keys_text(net_name, build)
        path = os.path.join(args.out, stem + ".txt")
        if args.check:
            old = open(path).read() if os.path.exists(path) else ""
            same = entries(old) == entries(text)
            print(f"{stem:16} {len(entries(text)):4} entries  {'same' if same else 'DIFFERENT'}")
            if not same:
                differ.append(stem)
        else:
            with open(path, "w") as f:
                f.write(text)
            print(f"{stem:16} {len(entries(text)):4} entries  -> {os.path.relpath(path, REPO)}")
    if differ:
        print(f"torch_state_keys.py: {', '.join(differ)} differ from {args.out}; run without --check to rewrite",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
