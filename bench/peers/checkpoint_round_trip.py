#!/usr/bin/env python3
"""bench/peers/checkpoint_round_trip.py: Glassbox checkpoints and PyTorch
state_dicts, each loaded by the other, compared on the same images.

  1. Glassbox -> PyTorch. For each network: `glassbox train NET --data
     synthetic:N --batch N --epochs 1 --checkpoint-dir DIR`, then
     DIR/epoch-0001.safetensors into the PyTorch model with
     load_state_dict(strict=True); both networks in inference mode (batch norm
     on running statistics, no dropout) on the same random images (batch 2):
     Glassbox's logits from `glassbox eval NET --weights FILE --input IMAGES
     --logits OUT`, PyTorch's from model.eval().
  2. PyTorch -> Glassbox. A freshly initialised PyTorch model, its batch-norm
     running statistics perturbed (so that mean 0, variance 1 cannot hide a
     slip), saved with safetensors.torch.save_file, into `glassbox eval`; the
     same comparison.
  3. Accuracy. The peer's LeNet trained by PyTorch for one epoch on
     Fashion-MNIST ((x / 255 - 0.2860) / 0.3530), saved with save_file;
     `glassbox eval LeNet --weights F --data fashion-mnist` must count the
     same correct images of the 10,000 as PyTorch's own evaluation.

Networks: peer_models.py's (torchvision's AlexNet, VGG11/13/16/19, GoogLeNet
and InceptionV3 without aux heads, ResNet18..152; the peer's LeNet, Overfeat,
ResNet56, Xception, FCN5), all with Glassbox's classes, and any MLP spec
(MLP:784,256,10: peer_custom_models.mlp, Glassbox's nets/mlp_spec.h). Default:
AlexNet, VGG11, GoogLeNet, InceptionV3, ResNet18, ResNet50; --nets all for
every one of peer_models.py's.

Logits are compared as max |glassbox - pytorch| (abs) and that divided by
max |pytorch| (rel, the scale of the logits); a network passes with rel <=
--tolerance (default 1e-4: both sides compute in fp32, TF32 off, in
different orders). Prints a table; exits 1 if anything failed, 2 for a usage
error.

Usage (with a Python that has torch, torchvision and safetensors):
  python3 bench/peers/checkpoint_round_trip.py
      [--glassbox build/glassbox] [--nets AlexNet,ResNet50,MLP:784,256,10 | all] [--parts 1,2,3]
      [--tolerance 1e-4] [--device cpu] [--threads 2] [--work DIR] [--keep]
The pure-Python parts (parsing, comparison, the table) are tested by
bench/peers/test_checkpoint_round_trip.py without torch.
"""

import argparse
import gzip
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from peer_models import NET_NAMES, find_net  # noqa: E402  (does not import torch)

PROG = "checkpoint_round_trip.py"
DEFAULT_NETS = ["AlexNet", "VGG11", "GoogLeNet", "InceptionV3", "ResNet18", "ResNet50"]
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530
COMMAND_TIMEOUT_S = 3600


class UsageError(Exception):
    """A bad request: one line on stderr, exit status 2."""


class StepFailed(Exception):
    """One check could not run (a command failed, a load was refused): its row fails, the others go on."""


# ---- Pure parts (tested without torch) ----------------------------------------------

MLP_PREFIX = "MLP:"


class MlpNet:
    """An MLP spec as a network of this script: its canonical name, one image's
    shape as Glassbox's nets/mlp.cpp takes it, and its PyTorch module."""

    def __init__(self, sizes):
        self.sizes = list(sizes)
        self.name = MLP_PREFIX + ",".join(str(n) for n in self.sizes)
        self.sample = (1, 28, 28) if self.sizes[0] == 784 else (self.sizes[0], 1, 1)

    def build(self):
        import peer_custom_models
        return peer_custom_models.mlp(self.sizes)


def parse_mlp(text):
    """An MlpNet from "MLP:784,256,10" (the prefix in any case), or None if `text` does not
    start with "MLP:". Sizes are decimal digits separated by commas, features first and
    classes last; Glassbox checks their limits itself and refuses by name what it does not
    build."""
    if text[:len(MLP_PREFIX)].upper() != MLP_PREFIX:
        return None
    items = text[len(MLP_PREFIX):].split(",")
    if len(items) < 2 or not all(item.isascii() and item.isdigit() for item in items):
        raise UsageError(f"'{text}' is no MLP spec: its sizes are whole numbers separated by commas, "
                         f"the features first and the classes last (MLP:784,256,10)")
    return MlpNet(int(item) for item in items)


def split_net_names(text):
    """--nets' names: split at commas, except that an MLP spec keeps the sizes after it
    ("ResNet50,MLP:784,256,10,LeNet" is three names; no network's name is a number).
    Empty names between commas are passed over."""
    names = []
    for word in (w.strip() for w in text.split(",")):
        if names and names[-1][:len(MLP_PREFIX)].upper() == MLP_PREFIX and (word.isdigit() or not word):
            names[-1] += "," + word  # an empty size stays, for parse_mlp to refuse
        elif word:
            names.append(word)
    return names


def file_stem(name):
    """`name` as part of a file name: "MLP:784,256,10" -> "MLP-784-256-10"."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", name)


def net_of(name):
    """The network `name` names: peer_models' NetSpec (any case) or an MlpNet; None if neither."""
    return parse_mlp(name) or find_net(name)


def select_nets(text):
    """--nets: "all" (peer_models' networks), or names separated by commas (any case), in
    peer_models' spelling, and MLP specs, whose own sizes are separated by commas too."""
    if text.strip().lower() == "all":
        return list(NET_NAMES)
    names = []
    for word in split_net_names(text):
        spec = net_of(word)
        if spec is None:
            raise UsageError(f"unknown network '{word}'; known: {', '.join(NET_NAMES)}, an MLP spec "
                             f"(MLP:784,256,10), or all")
        names.append(spec.name)
    if not names:
        raise UsageError("--nets names no network")
    return names


def select_parts(text):
    parts = sorted({p.strip() for p in text.split(",") if p.strip()})
    if not parts or any(p not in ("1", "2", "3") for p in parts):
        raise UsageError(f"--parts takes 1, 2 and 3 separated by commas, got '{text}'")
    return [int(p) for p in parts]


def parse_accuracy(output):
    """(accuracy, correct, total) from glassbox eval's line "accuracy: 0.8765 (8765 of 10000)"."""
    match = re.search(r"^accuracy:\s*([0-9.]+)\s*\(([0-9,]+) of ([0-9,]+)\)", output, re.MULTILINE)
    if not match:
        raise StepFailed("glassbox eval printed no 'accuracy: A (C of N)' line")
    return float(match.group(1)), int(match.group(2).replace(",", "")), int(match.group(3).replace(",", ""))


def parse_loss(output):
    """The mean loss from glassbox eval's line "loss: 0.3456"."""
    match = re.search(r"^loss:\s*([0-9.eE+-]+|nan|inf)", output, re.MULTILINE)
    if not match:
        raise StepFailed("glassbox eval printed no 'loss: L' line")
    return float(match.group(1))


def logits_difference(glassbox, pytorch):
    """(max |g - p|, max |g - p| / max |p|) over two equal-shaped lists of rows (or arrays)."""
    g = [float(v) for row in glassbox for v in row]
    p = [float(v) for row in pytorch for v in row]
    if len(g) != len(p) or len(glassbox) != len(pytorch):
        raise StepFailed(f"logits of different shapes: Glassbox {len(glassbox)} rows of {len(g)} values, "
                         f"PyTorch {len(pytorch)} rows of {len(p)}")
    worst = max((abs(a - b) for a, b in zip(g, p)), default=0.0)
    scale = max((abs(b) for b in p), default=0.0)
    return worst, (worst / scale if scale > 0 else (0.0 if worst == 0 else float("inf")))


def read_idx(path):
    """An IDX file (gzip-compressed or not) as a uint8 numpy array."""
    import numpy as np
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise StepFailed(f"{path}: not an IDX file of unsigned bytes")
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * rank).reshape(dims)


def table(rows):
    """Rows of (check, network, result, detail) as aligned text."""
    header = ("check", "network", "result", "detail")
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(3)]
    lines = [f"{header[0]:<{widths[0]}}  {header[1]:<{widths[1]}}  {header[2]:<{widths[2]}}  {header[3]}"]
    lines.append("-" * (sum(widths) + 6 + len(header[3])))
    for check, net, result, detail in rows:
        lines.append(f"{check:<{widths[0]}}  {net:<{widths[1]}}  {result:<{widths[2]}}  {detail}")
    return "\n".join(lines)


def check_settings(args):
    """The numbers and the work folder, before torch is loaded: a bad one is UsageError."""
    if not (math.isfinite(args.tolerance) and args.tolerance >= 0):  # NaN or below 0 would fail every row
        raise UsageError(f"--tolerance must be a finite number, 0 or more, got {args.tolerance}")
    if args.threads < 1:
        raise UsageError(f"--threads must be 1 or more, got {args.threads}")
    if args.work is not None and os.path.exists(args.work) and not os.path.isdir(args.work):
        raise UsageError(f"--work {args.work} is a file, not a folder")


def find_glassbox(given):
    candidates = [given] if given else [os.path.join(REPO, "build", "glassbox"), os.path.join(REPO, "build-cpu", "glassbox")]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise UsageError(f"no glassbox program at {' or '.join(candidates)}; build it (make build) or give --glassbox")


# ---- Running things -------------------------------------------------------------------

def run(command, what):
    """Runs a command; its output, or StepFailed with the command and the end of what it printed."""
    started = time.time()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise StepFailed(f"{what}: no answer in {COMMAND_TIMEOUT_S} s: {' '.join(command)}")
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-6:])
        raise StepFailed(f"{what} failed (exit {done.returncode}): {' '.join(command)}\n{tail}")
    print(f"  {what}: {time.time() - started:.1f} s", flush=True)
    return done.stdout


def build_model(name):
    """The PyTorch model of `name` as peer_models builds it (torchvision's or the peer's), in eval mode."""
    model = net_of(name).build()
    return model.eval()


def pytorch_logits(model, images):
    import torch
    with torch.no_grad():
        out = model(images)
    return out.logits if hasattr(out, "logits") else out  # GoogLeNet/Inception return a namedtuple in training


def glassbox_logits(glassbox, name, weights, images, work, device):
    import safetensors.torch
    images_path = os.path.join(work, f"{file_stem(name)}-images.safetensors")
    logits_path = os.path.join(work, f"{file_stem(name)}-logits.safetensors")
    safetensors.torch.save_file({"images": images.contiguous()}, images_path)
    command = [glassbox, "eval", name, "--weights", weights, "--input", images_path, "--logits", logits_path]
    if device:
        command += ["--device", device]
    run(command, f"glassbox eval {name} --input")
    return safetensors.torch.load_file(logits_path)["logits"]


def compare(name, glassbox, pytorch, tolerance):
    worst, relative = logits_difference(glassbox.tolist(), pytorch.tolist())
    passed = relative <= tolerance
    return ("PASS" if passed else "FAIL"), f"abs {worst:.3g}, rel {relative:.3g} (tolerance {tolerance:g})"


def random_images(name, seed):
    import torch
    generator = torch.Generator().manual_seed(seed)
    return torch.randn((2,) + tuple(net_of(name).sample), generator=generator)


def glassbox_to_pytorch(glassbox, name, work, args):
    import safetensors.torch
    run_dir = os.path.join(work, f"{file_stem(name)}-run")
    shutil.rmtree(run_dir, ignore_errors=True)
    batch = 2
    command = [glassbox, "train", name, "--data", f"synthetic:{batch}", "--batch", str(batch), "--epochs", "1",
               "--checkpoint-dir", run_dir]
    run(command, f"glassbox train {name}")
    weights = os.path.join(run_dir, "epoch-0001.safetensors")
    if not os.path.exists(weights):
        raise StepFailed(f"glassbox train wrote no {weights}")
    model = build_model(name)
    try:
        model.load_state_dict(safetensors.torch.load_file(weights), strict=True)
    except RuntimeError as e:
        raise StepFailed(f"PyTorch refused {weights}: {str(e).splitlines()[0]} ...")
    images = random_images(name, 1)
    return compare(name, glassbox_logits(glassbox, name, weights, images, work, args.device),
                   pytorch_logits(model, images), args.tolerance)


def perturb_statistics(model, seed):
    """Batch norms' running statistics away from 0 and 1, and their counters non-zero."""
    import torch
    import torch.nn as nn
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=generator) * 0.2 - 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=generator) + 0.5)
                m.num_batches_tracked.fill_(100)


def pytorch_to_glassbox(glassbox, name, work, args):
    import safetensors.torch
    import torch
    torch.manual_seed(2)
    model = build_model(name)
    perturb_statistics(model, 3)
    weights = os.path.join(work, f"{file_stem(name)}-pytorch.safetensors")
    safetensors.torch.save_file(model.state_dict(), weights, metadata={"format": "pt"})
    images = random_images(name, 4)
    return compare(name, glassbox_logits(glassbox, name, weights, images, work, args.device),
                   pytorch_logits(model, images), args.tolerance)


def fashion_mnist(split):
    import torch
    stem = {"train": "train", "test": "t10k"}[split]
    images = read_idx(os.path.join(FASHION_MNIST, f"{stem}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(FASHION_MNIST, f"{stem}-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(images.copy()).float().div_(255).sub_(MEAN).div_(STD).unsqueeze(1)
    return x, torch.from_numpy(labels.astype("int64"))


def accuracy(glassbox, work, args):
    """PyTorch trains LeNet one epoch; both evaluate it on the 10,000 test images."""
    import safetensors.torch
    import torch
    import torch.nn.functional as F
    torch.manual_seed(5)
    model = find_net("LeNet").build()
    x, y = fashion_mnist("train")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, weight_decay=5e-4)
    model.train()
    started = time.time()
    for batch in torch.randperm(len(y)).split(64):
        optimizer.zero_grad()
        F.cross_entropy(model(x[batch]), y[batch]).backward()
        optimizer.step()
    print(f"  PyTorch trained LeNet for one epoch: {time.time() - started:.1f} s", flush=True)
    model.eval()
    x, y = fashion_mnist("test")
    with torch.no_grad():
        logits = torch.cat([model(part) for part in x.split(1000)])
    correct = int((logits.argmax(1) == y).sum())
    loss = float(F.cross_entropy(logits, y))
    weights = os.path.join(work, "LeNet-fashion-mnist.safetensors")
    safetensors.torch.save_file(model.state_dict(), weights, metadata={"format": "pt"})
    command = [glassbox, "eval", "LeNet", "--weights", weights, "--data", "fashion-mnist"]
    if args.device:
        command += ["--device", args.device]
    output = run(command, "glassbox eval LeNet --data fashion-mnist")
    g_accuracy, g_correct, g_total = parse_accuracy(output)
    g_loss = parse_loss(output)
    detail = (f"PyTorch {correct / len(y):.4f} ({correct} of {len(y)}), loss {loss:.4f}; "
              f"Glassbox {g_accuracy:.4f} ({g_correct} of {g_total}), loss {g_loss:.4f}")
    same = g_correct == correct and g_total == len(y) and abs(g_loss - loss) <= 1e-3
    return ("PASS" if same else "FAIL"), detail


def main(argv=None):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--glassbox", help="the glassbox program (default: build/glassbox, else build-cpu/glassbox)")
    parser.add_argument("--nets", default=",".join(DEFAULT_NETS), help="networks for parts 1 and 2, or 'all'")
    parser.add_argument("--parts", default="1,2,3", help="which checks: 1, 2, 3 (default all three)")
    parser.add_argument("--tolerance", type=float, default=1e-4, help="largest relative logits difference (1e-4)")
    parser.add_argument("--device", help="passed to glassbox eval as --device (cpu, cuda)")
    parser.add_argument("--threads", type=int, default=2, help="PyTorch's threads (2)")
    parser.add_argument("--work", help="folder for the files (default: a temporary one, removed)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    try:
        args = parser.parse_args(argv)
        nets = select_nets(args.nets)
        parts = select_parts(args.parts)
        check_settings(args)
        glassbox = find_glassbox(args.glassbox)
    except UsageError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    import torch
    torch.set_num_threads(args.threads)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    work = args.work or tempfile.mkdtemp(prefix="glassbox-round-trip-")
    try:
        os.makedirs(work, exist_ok=True)
    except OSError as e:
        print(f"{PROG}: --work {work}: {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"{PROG}: glassbox {glassbox}, torch {torch.__version__}, files in {work}", flush=True)

    checks = []
    for part, label, function in ((1, "Glassbox -> PyTorch", glassbox_to_pytorch),
                                  (2, "PyTorch -> Glassbox", pytorch_to_glassbox)):
        if part in parts:
            checks += [(label, name, lambda f=function, n=name: f(glassbox, n, work, args)) for name in nets]
    if 3 in parts:
        checks.append(("accuracy (Fashion-MNIST)", "LeNet", lambda: accuracy(glassbox, work, args)))
    rows = []
    for label, name, check in checks:
        print(f"{label}: {name}", flush=True)
        try:
            result, detail = check()
        except StepFailed as e:
            result, detail = "FAIL", str(e).splitlines()[0]
            print(f"  {e}", file=sys.stderr, flush=True)
        rows.append((label, name, result, detail))
    print()
    print(table(rows))
    failed = sum(r[2] != "PASS" for r in rows)
    print(f"\n{len(rows) - failed} of {len(rows)} passed" + (f"; {failed} FAILED" if failed else ""))
    if not args.work and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    elif args.keep:
        print(f"files kept in {work}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
