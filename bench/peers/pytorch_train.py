#!/usr/bin/env python3
"""bench/peers/pytorch_train.py: the PyTorch peer of `glassbox train` on
Fashion-MNIST: the same network (peer_models.py), data, schedule and
reports, so that accuracy and time per epoch can be set side by side
(bench/train_vs_pytorch.py runs the two interleaved).

What is the same as Glassbox's defaults (tools/cli/train.cpp):
  data      Fashion-MNIST's IDX files (Debian's dataset-fashion-mnist, or the
            folder of --data fashion-mnist:DIR), checked whole as Glassbox
            checks them (a bad file or more images than labels is an error),
            pixels (x / 255 - 0.2860) / 0.3530; the training images (60,000)
            in a fresh permutation each epoch, the last partial batch dropped,
            so an epoch is images // batch steps; the test images (10,000)
            after every epoch (eval(): no dropout)
  SGD       torch.optim.SGD: lr 0.05, momentum 0.9, weight decay 5e-4 on
            every parameter, optional Nesterov; the rate set before every
            step from the same formula: linear warm-up, then cosine over the
            run's steps (or constant)
  reports   per epoch: train loss and accuracy (training mode, over the
            batches as trained), test loss and accuracy, the epoch's training
            wall time split into waiting for data and computing, images/s;
            --log writes glassbox train's JSON lines
What differs, on purpose: PyTorch's own initialisation and random streams.

Two data pipelines (--pipeline):
  torchvision  torchvision.datasets.FashionMNIST with ToTensor + Normalize in a
               DataLoader with --workers processes: what a PyTorch user writes
  tensors      the whole set as one normalised tensor, batches by indexing:
               the fastest PyTorch can be fed, for comparing compute alone

Usage:
  python3 bench/peers/pytorch_train.py [--net LeNet] [--data fashion-mnist[:DIR]]
      [--epochs 10] [--batch 64] [--lr 0.05] [--schedule cosine|constant]
      [--warmup-epochs 0] [--momentum 0.9] [--weight-decay 5e-4] [--nesterov]
      [--seed 1] [--threads 2] [--workers 0] [--pipeline torchvision|tensors]
      [--log FILE]
A bad flag is a usage error (exit status 2), a bad data file one line naming it
(exit status 1), both before anything is trained.
"""

import argparse
import atexit
import gzip
import json
import math
import os
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # bench/, for results_io

from peer_models import find_net  # noqa: E402
from results_io import BadInput, check_output, count, positive_float, positive_int  # noqa: E402

PROG = "pytorch_train.py"
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530
FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
SIDE = 28  # Fashion-MNIST's images are 28x28
CLASSES = 10
EPOCH_SEED_FACTOR = 1_000_003  # an epoch's shuffle is seeded with seed * this + epoch


def read_idx(path, rank):
    """An IDX file of unsigned bytes, gzip-compressed or not (told by its first
    two bytes, as Glassbox tells it), checked as Glassbox's reader checks it
    (data/idx_dataset.cpp): the images (rank 3) 28x28, the labels (rank 1) 0
    to 9, at least one, and the data ending where the header says. Returns
    (count, the decompressed bytes); a bad file is BadInput naming it."""
    what = "images, rows, columns" if rank == 3 else "labels"
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror or e}")
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise BadInput(f"{path}: not a whole gzip file: {e}")
    if len(data) >= 4:
        if data[0] != 0 or data[1] != 0:
            raise BadInput(f"{path}: byte 0: not an IDX file: expected the magic 00 00 08 0{rank} ({what}), "
                           f"found {data[:4].hex(' ')}")
        if data[2] != 8:
            raise BadInput(f"{path}: byte 2: IDX element type {data[2]:02x}, expected 08 (unsigned bytes)")
        if data[3] != rank:
            raise BadInput(f"{path}: byte 3: {data[3]} dimension{'' if data[3] == 1 else 's'}, expected {rank} "
                           f"({what}): is it {'a labels' if rank == 3 else 'an images'} file?")
    header = 4 + 4 * rank
    if len(data) < header:
        raise BadInput(f"{path}: truncated at byte {len(data):,} of the decompressed data: an IDX header of "
                       f"{rank} dimension{'' if rank == 1 else 's'} ({what}) needs {header} bytes")
    sizes = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    if sizes[0] == 0:
        raise BadInput(f"{path}: byte 4: 0 {what.split(',')[0]}; expected at least one")
    if rank == 3 and sizes[1:] != [SIDE, SIDE]:
        raise BadInput(f"{path}: byte 8: images of {sizes[1]}x{sizes[2]}, expected {SIDE}x{SIDE}")
    content = f"{sizes[0]:,} images of {SIDE}x{SIDE}" if rank == 3 else f"{sizes[0]:,} labels"
    expected = header + math.prod(sizes)
    if len(data) < expected:
        raise BadInput(f"{path}: truncated at byte {len(data):,} of the decompressed data: {content} need "
                       f"{expected:,} bytes")
    if len(data) > expected:
        raise BadInput(f"{path}: byte {expected:,}: {len(data) - expected:,} bytes past the end of {content}; "
                       "expected the data to end there")
    if rank == 1 and max(data[header:]) >= CLASSES:
        at = next(i for i in range(header, len(data)) if data[i] >= CLASSES)
        raise BadInput(f"{path}: byte {at:,}: label {data[at]} (of image {at - header:,}); expected 0 to {CLASSES - 1}")
    return sizes[0], data


def find_file(folder, stem):
    for name in (stem + ".gz", stem):
        if os.path.exists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    raise BadInput(f"{folder}: neither {stem}.gz nor {stem} is there")


def read_split(images_path, labels_path):
    """(count, images bytes, labels bytes) of one split, its two files holding as many images as labels."""
    images, image_bytes = read_idx(images_path, 3)
    labels, label_bytes = read_idx(labels_path, 1)
    if images != labels:
        raise BadInput(f"{images_path} has {images:,} images but {labels_path} has {labels:,} labels")
    return images, image_bytes, label_bytes


def steps_per_epoch(images, batch):
    """The steps of an epoch, as Glassbox's Loader counts them: full batches only, the last partial one
    dropped (drop_last), so that the schedule runs over the same steps. Fewer images than one batch is
    BadInput."""
    if images < batch:
        raise BadInput(f"{images:,} images, fewer than one batch, and the last partial batch of an epoch is dropped")
    return images // batch


def tensors_pipeline(torch, data, split, batch, shuffle, seed_of_epoch):
    """Batches by indexing one normalised tensor: a generator per epoch."""
    import numpy as np
    n, image_bytes, label_bytes = data[split]
    pixels = np.frombuffer(image_bytes, np.uint8, offset=16).reshape(n, SIDE, SIDE)
    x = torch.from_numpy(pixels.copy()).float().div_(255).sub_(MEAN).div_(STD)
    x = x.unsqueeze(1)
    y = torch.from_numpy(np.frombuffer(label_bytes, np.uint8, offset=8).astype("int64"))

    def epoch(e):
        n = len(y)
        order = torch.randperm(n, generator=torch.Generator().manual_seed(seed_of_epoch(e))) if shuffle \
            else torch.arange(n)
        full = n // batch * batch if shuffle else n
        for i in range(0, full, batch):
            index = order[i:i + batch]
            yield x[index], y[index]
    return epoch


def torchvision_pipeline(torch, data, split, batch, shuffle, seed_of_epoch, workers):
    """torchvision's FashionMNIST dataset in a DataLoader. torchvision looks for
    the uncompressed IDX files in root/FashionMNIST/raw, so they are written
    there (a temporary folder) first, from the checked bytes."""
    import shutil
    import torchvision
    from torchvision import transforms
    root = tempfile.mkdtemp(prefix="fashion-mnist-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    raw = os.path.join(root, "FashionMNIST", "raw")
    os.makedirs(raw)
    for name in FILES:
        _, image_bytes, label_bytes = data[name]
        for stem, content in zip(FILES[name], (image_bytes, label_bytes)):
            with open(os.path.join(raw, stem), "wb") as out:
                out.write(content)
    dataset = torchvision.datasets.FashionMNIST(
        root, train=split == "train", download=False,
        transform=transforms.Compose([transforms.ToTensor(), transforms.Normalize((MEAN,), (STD,))]))

    def epoch(e):
        generator = torch.Generator().manual_seed(seed_of_epoch(e))
        return iter(torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=shuffle, drop_last=shuffle,
                                                num_workers=workers, generator=generator,
                                                persistent_workers=False))
    return epoch


def learning_rate(args, step, total_steps, steps_per_epoch):
    """Glassbox's optim/lr_schedule.h, step by step."""
    warmup = args.warmup_epochs * steps_per_epoch
    if step < warmup:
        return args.lr * (step + 1) / warmup
    if args.schedule == "constant":
        return args.lr
    progress = min((step - warmup) / max(total_steps - warmup, 1), 1.0)
    return args.lr * 0.5 * (1.0 + math.cos(math.pi * progress))


def parse_args(argv=None):
    """The flags, each checked as `glassbox train` checks it (tools/cli/train_settings.cpp): a bad one is
    argparse's usage error, exit status 2, before any data is read."""
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--net", default="LeNet")
    parser.add_argument("--data", default="fashion-mnist")
    parser.add_argument("--epochs", type=positive_int, default=10)
    parser.add_argument("--batch", type=positive_int, default=64)
    parser.add_argument("--lr", type=positive_float, default=0.05)
    parser.add_argument("--schedule", choices=["cosine", "constant"], default="cosine")
    parser.add_argument("--warmup-epochs", type=count, default=0)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--nesterov", action="store_true")
    parser.add_argument("--seed", type=count, default=1)
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--workers", type=count, default=0)
    parser.add_argument("--pipeline", choices=["torchvision", "tensors"], default="torchvision")
    parser.add_argument("--log")
    args = parser.parse_args(argv)
    if args.data != "fashion-mnist" and not args.data.startswith("fashion-mnist:"):
        parser.error(f"--data: only fashion-mnist or fashion-mnist:DIR, got '{args.data}'")
    args.folder = args.data.split(":", 1)[1] if ":" in args.data else FASHION_MNIST
    if not args.folder:
        parser.error("--data fashion-mnist:DIR needs the folder DIR")
    spec = find_net(args.net)
    if spec is None or tuple(spec.sample) != (1, SIDE, SIDE):
        parser.error(f"--net: {args.net} does not take 28x28 grey images")
    args.spec = spec
    if args.warmup_epochs >= args.epochs:
        parser.error(f"--warmup-epochs {args.warmup_epochs} leaves none of the {args.epochs} epochs for the "
                     "schedule; give fewer warm-up epochs")
    if not 0.0 <= args.momentum <= 1.0:  # (NaN fails both)
        parser.error(f"--momentum must be from 0 to 1, got {args.momentum}")
    if not (math.isfinite(args.weight_decay) and args.weight_decay >= 0.0):
        parser.error(f"--weight-decay must be a finite number, 0 or more, got {args.weight_decay}")
    # torch.Generator takes seeds below 2^64.
    largest_seed = (2 ** 64 - 1 - args.epochs) // EPOCH_SEED_FACTOR
    if args.seed > largest_seed:
        parser.error(f"--seed must be from 0 to {largest_seed} (an epoch's shuffle is seeded with "
                     f"seed x {EPOCH_SEED_FACTOR:,} + epoch, which torch takes below 2^64), got {args.seed}")
    if args.log is not None:
        try:
            check_output(args.log, "--log")
        except BadInput as e:
            parser.error(str(e))
    return args


def main(argv=None):
    args = parse_args(argv)
    folder, spec = args.folder, args.spec
    # The data are read and checked whole before torch is loaded; the run's
    # steps per epoch are those of the training images given (Glassbox's
    # Loader: full batches only, the last partial one dropped).
    try:
        paths = {split: [find_file(folder, stem) for stem in FILES[split]] for split in FILES}
    except BadInput as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    try:
        if args.log is not None:
            check_output(args.log, "--log", inputs=paths["train"] + paths["test"])
    except BadInput as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    try:
        data = {split: read_split(*paths[split]) for split in FILES}
    except BadInput as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    try:
        steps = steps_per_epoch(data["train"][0], args.batch)
    except BadInput as e:
        print(f"{PROG}: --batch {args.batch}: {paths['train'][0]} has {e}", file=sys.stderr)
        return 2
    total_steps = steps * args.epochs

    import torch
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = spec.build()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                                weight_decay=args.weight_decay, nesterov=args.nesterov)

    def seed_of_epoch(e):
        return args.seed * EPOCH_SEED_FACTOR + e

    if args.pipeline == "tensors":
        train = tensors_pipeline(torch, data, "train", args.batch, True, seed_of_epoch)
        test = tensors_pipeline(torch, data, "test", args.batch, False, seed_of_epoch)
    else:
        train = torchvision_pipeline(torch, data, "train", args.batch, True, seed_of_epoch, args.workers)
        test = torchvision_pipeline(torch, data, "test", args.batch, False, seed_of_epoch, args.workers)
    try:
        log = open(args.log, "a") if args.log else None
    except OSError as e:
        print(f"{PROG}: --log {args.log}: {e.strerror or e}", file=sys.stderr)
        return 2

    def write(line):
        if log:
            # JSON has no NaN or infinity (a diverged loss): null for those, as glassbox train's log writes them.
            line = {key: None if isinstance(value, float) and not math.isfinite(value) else value
                    for key, value in line.items()}
            log.write(json.dumps(line) + "\n")
            log.flush()

    write({"event": "start", "net": args.net, "data": args.data, "batch": str(args.batch), "peer": "pytorch",
           "torch": torch.__version__, "pipeline": args.pipeline, "threads": str(args.threads),
           "workers": str(args.workers)})
    print(f"{args.net} in PyTorch {torch.__version__} on the CPU, {args.threads} threads, batch {args.batch}, "
          f"{args.pipeline} pipeline with {args.workers} workers")
    print("epoch  train loss  train acc  test loss  test acc  time (s)  data wait     compute  images/s        lr")
    step = 0
    for epoch in range(1, args.epochs + 1):
        model.train()
        seen = correct = 0
        loss_sum = wait = compute = 0.0
        start = time.perf_counter()
        batches = train(epoch - 1)
        while True:
            before = time.perf_counter()
            batch = next(batches, None)
            wait += time.perf_counter() - before
            if batch is None:
                break
            x, y = batch
            lr = learning_rate(args, step, total_steps, steps)
            for group in optimizer.param_groups:
                group["lr"] = lr
            before = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            optimizer.step()
            compute += time.perf_counter() - before
            step += 1
            seen += len(y)
            loss_sum += loss.item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
        seconds = time.perf_counter() - start
        model.eval()
        test_seen = test_correct = 0
        test_loss = 0.0
        test_start = time.perf_counter()
        with torch.no_grad():
            for x, y in test(0):
                logits = model(x)
                test_loss += F.cross_entropy(logits, y, reduction="sum").item()
                test_correct += (logits.argmax(1) == y).sum().item()
                test_seen += len(y)
        row = {"event": "epoch", "epoch": epoch, "epochs": args.epochs, "global_step": step, "lr": lr,
               "train_loss": loss_sum / seen, "train_accuracy": correct / seen,
               "test_loss": test_loss / test_seen, "test_accuracy": test_correct / test_seen,
               "test_seconds": time.perf_counter() - test_start, "seconds": seconds,
               "data_wait_seconds": wait, "compute_seconds": compute, "images_per_second": seen / seconds}
        write(row)
        print(f"{epoch:>2}/{args.epochs:<2}{row['train_loss']:>12.4f}{100 * row['train_accuracy']:>10.2f}%"
              f"{row['test_loss']:>11.4f}{100 * row['test_accuracy']:>9.2f}%{seconds:>10.2f}"
              f"{wait:>7.2f}{round(100 * wait / seconds):>3}%{compute:>8.2f}{round(100 * compute / seconds):>3}%"
              f"{round(row['images_per_second']):>10,}{lr:>10.6f}", flush=True)
    print(f"\ntest accuracy after epoch {args.epochs}: {100 * test_correct / test_seen:.2f}% "
          f"({test_correct} of {test_seen})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
