#!/usr/bin/env python3
"""bench/peers/pytorch_train.py: the PyTorch peer of `glassbox train` on
Fashion-MNIST: the same network (peer_models.py), data, schedule and
reports, so that accuracy and time per epoch can be set side by side
(bench/train_vs_pytorch.py runs the two interleaved).

What is the same as Glassbox's defaults (tools/cli/train.cpp):
  data      Fashion-MNIST's IDX files (Debian's dataset-fashion-mnist), pixels
            (x / 255 - 0.2860) / 0.3530; 60,000 training images in a fresh
            permutation each epoch, the last partial batch dropped; the
            10,000 test images after every epoch (eval(): no dropout)
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

from peer_models import find_net

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530
FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def read_idx(path):
    """An IDX file (gzip-compressed or not) as a uint8 numpy array."""
    import numpy as np
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * rank).reshape(dims)


def find_file(folder, stem):
    for name in (stem + ".gz", stem):
        if os.path.exists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    raise SystemExit(f"pytorch_train.py: {folder} has no {stem}[.gz]")


def tensors_pipeline(torch, folder, split, batch, shuffle, seed_of_epoch):
    """Batches by indexing one normalised tensor: a generator per epoch."""
    images_file, labels_file = FILES[split]
    x = torch.from_numpy(read_idx(find_file(folder, images_file)).copy()).float().div_(255).sub_(MEAN).div_(STD)
    x = x.unsqueeze(1)
    y = torch.from_numpy(read_idx(find_file(folder, labels_file)).astype("int64"))

    def epoch(e):
        n = len(y)
        order = torch.randperm(n, generator=torch.Generator().manual_seed(seed_of_epoch(e))) if shuffle \
            else torch.arange(n)
        full = n // batch * batch if shuffle else n
        for i in range(0, full, batch):
            index = order[i:i + batch]
            yield x[index], y[index]
    return epoch


def torchvision_pipeline(torch, folder, split, batch, shuffle, seed_of_epoch, workers):
    """torchvision's FashionMNIST dataset in a DataLoader. torchvision looks for
    the uncompressed IDX files in root/FashionMNIST/raw, so they are written
    there (a temporary folder) first."""
    import shutil
    import torchvision
    from torchvision import transforms
    root = tempfile.mkdtemp(prefix="fashion-mnist-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    raw = os.path.join(root, "FashionMNIST", "raw")
    os.makedirs(raw)
    for stem in FILES["train"] + FILES["test"]:
        source = find_file(folder, stem)
        opener = gzip.open if source.endswith(".gz") else open
        with opener(source, "rb") as f, open(os.path.join(raw, stem), "wb") as out:
            shutil.copyfileobj(f, out)
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


def main():
    parser = argparse.ArgumentParser(prog="pytorch_train.py", description=__doc__.split("\n")[0])
    parser.add_argument("--net", default="LeNet")
    parser.add_argument("--data", default="fashion-mnist")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--schedule", choices=["cosine", "constant"], default="cosine")
    parser.add_argument("--warmup-epochs", type=int, default=0)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--nesterov", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--pipeline", choices=["torchvision", "tensors"], default="torchvision")
    parser.add_argument("--log")
    args = parser.parse_args()
    if args.data != "fashion-mnist" and not args.data.startswith("fashion-mnist:"):
        parser.error(f"--data: only fashion-mnist or fashion-mnist:DIR, got '{args.data}'")
    folder = args.data.split(":", 1)[1] if ":" in args.data else FASHION_MNIST
    spec = find_net(args.net)
    if spec is None or tuple(spec.sample) != (1, 28, 28):
        parser.error(f"--net: {args.net} does not take 28x28 grey images")

    import torch
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = spec.build()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                                weight_decay=args.weight_decay, nesterov=args.nesterov)

    def seed_of_epoch(e):
        return args.seed * 1_000_003 + e

    if args.pipeline == "tensors":
        train = tensors_pipeline(torch, folder, "train", args.batch, True, seed_of_epoch)
        test = tensors_pipeline(torch, folder, "test", args.batch, False, seed_of_epoch)
    else:
        train = torchvision_pipeline(torch, folder, "train", args.batch, True, seed_of_epoch, args.workers)
        test = torchvision_pipeline(torch, folder, "test", args.batch, False, seed_of_epoch, args.workers)
    steps_per_epoch = 60000 // args.batch
    total_steps = steps_per_epoch * args.epochs
    log = open(args.log, "a") if args.log else None

    def write(line):
        if log:
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
            lr = learning_rate(args, step, total_steps, steps_per_epoch)
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
