#!/usr/bin/env python3
"""bench/peers/pytorch_data.py: the PyTorch peer of build/bench_data: one
worker preparing samples from a folder of JPEGs, through torchvision's
ImageFolder (PIL's decoder, convert("RGB")) and its ImageNet transforms:

  training    Resize(256), RandomCrop(224), RandomHorizontalFlip(), ToTensor(), Normalize
  evaluation  Resize(256), CenterCrop(224), ToTensor(), Normalize
              (mean 0.485, 0.456, 0.406; std 0.229, 0.224, 0.225)

Same names and counter as bench_data: ImageFolder/load/3x224x224/{training,
evaluation}, images/s; and the whole pipeline, a torch DataLoader with W
worker processes handing out shuffled batches of 32 (after its first batch),
as ImageFolder/loader/3x224x224/training/workers:W (--workers 1,2). Protocol, as bench_data's: one thread
(torch.set_num_threads(1), as in a DataLoader worker), every file read once
first so the page cache holds them, then dataset[i] for the next file in
turn, timed by the wall clock, until --min-time seconds are measured (at
least 3 samples); images/s from the mean.

Usage:
  python3 bench/peers/pytorch_data.py --folder PATH [--min-time S] [--workers 1,2] [--json PATH]

PATH/<class>/*.jpg (for a `glassbox make-folder` output, PATH/train). Errors
are one line on stderr, exit status 2. The JSON has Google Benchmark's shape
({"context", "benchmarks"}), for bench/compare.py.
"""

import argparse
import os
import platform
import sys
import time

from peer_report import git_commit, read_cpuinfo, write_json

PROG = "pytorch_data.py"
NAME = "ImageFolder/load/3x224x224/"


def transforms_for(transforms, mode):
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    if mode == "training":
        steps = [transforms.Resize(256), transforms.RandomCrop(224), transforms.RandomHorizontalFlip()]
    else:
        steps = [transforms.Resize(256), transforms.CenterCrop(224)]
    return transforms.Compose(steps + [transforms.ToTensor(), normalize])


def warm_page_cache(paths):
    """Reads every file once; returns the mean size in bytes."""
    total = 0
    for path in paths:
        with open(path, "rb") as f:
            total += len(f.read())
    return total / len(paths)


def run(dataset, min_time):
    for i in range(min(3, len(dataset))):  # warm-up: first calls build PIL's and torch's state
        dataset[i]
    times = []
    index = 0
    cpu_start = time.thread_time()
    while sum(times) < min_time or len(times) < 3:
        t0 = time.perf_counter()
        dataset[index]
        times.append(time.perf_counter() - t0)
        index = (index + 1) % len(dataset)
    cpu = time.thread_time() - cpu_start
    mean = sum(times) / len(times)
    return {"iterations": len(times), "real_time": mean * 1e3, "cpu_time": cpu / len(times) * 1e3,
            "time_unit": "ms", "images/s": 1.0 / mean}


def run_loader(torch, dataset, workers, min_time):
    """A DataLoader with `workers` processes, batches of 32 (bench_data's
    kLoaderBatch), shuffled, epoch after epoch; images/s over the wall time
    of the batches after the first (worker start-up is not measured)."""
    batch = 32
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=workers,
                                         drop_last=True, persistent_workers=True)
    batches = iter(loader)

    def next_batch():
        nonlocal batches
        try:
            return next(batches)
        except StopIteration:
            batches = iter(loader)
            return next(batches)

    next_batch()
    count = 0
    start = time.perf_counter()
    while time.perf_counter() - start < min_time or count < 3:
        next_batch()
        count += 1
    seconds = time.perf_counter() - start
    return {"iterations": count, "real_time": seconds / count * 1e3, "cpu_time": 0.0, "time_unit": "ms",
            "images/s": count * batch / seconds}


def main():
    parser = argparse.ArgumentParser(prog=PROG, description="PIL + torchvision preparing one folder's JPEGs")
    parser.add_argument("--folder", required=True, help="PATH/<class>/*.jpg")
    parser.add_argument("--min-time", type=float, default=1.0, help="seconds measured per mode (default 1)")
    parser.add_argument("--workers", default="1,2",
                        help="DataLoader worker counts for ImageFolder/loader/... (default 1,2; 0 for none)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    if not os.path.isdir(args.folder):
        print(f"{PROG}: --folder {args.folder}: no such folder", file=sys.stderr)
        return 2
    if args.min_time <= 0:
        print(f"{PROG}: --min-time must be positive, got {args.min_time}", file=sys.stderr)
        return 2

    import PIL
    import torch
    import torchvision
    from torchvision import datasets, transforms

    torch.set_num_threads(1)
    torch.manual_seed(1)
    try:
        probe = datasets.ImageFolder(args.folder)
    except (FileNotFoundError, RuntimeError) as e:
        print(f"{PROG}: --folder {args.folder}: {e}", file=sys.stderr)
        return 2
    paths = [path for path, _ in probe.samples]
    mean_bytes = warm_page_cache(paths)
    cpu_model, mhz = read_cpuinfo()
    context = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "executable": os.path.abspath(sys.argv[0]),
        "num_cpus": os.cpu_count(),
        "mhz_per_cpu": mhz,
        "load_avg": list(os.getloadavg()),
        "cpu": cpu_model,
        "framework": "torchvision.datasets.ImageFolder (PIL) + torchvision.transforms",
        "folder": f"{len(paths)} images in {len(probe.classes)} classes ({args.folder})",
        "mean_file_kib": mean_bytes / 1024,
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "pillow": PIL.__version__,
        "python": platform.python_version(),
        "torch_num_threads": torch.get_num_threads(),
        "commit": git_commit(),
        "protocol": f"one thread; dataset[i] of the next file (page cache warm), wall clock, until "
                    f"{args.min_time:g} s measured (at least 3); images/s from the mean",
    }
    print(f"{PROG}: {context['folder']}, {mean_bytes / 1024:.1f} KiB per file on average; torch {torch.__version__}, "
          f"torchvision {torchvision.__version__}, Pillow {PIL.__version__}, one thread")
    results = []
    for mode in ("training", "evaluation"):
        dataset = datasets.ImageFolder(args.folder, transform=transforms_for(transforms, mode))
        result = {"name": NAME + mode, "run_name": NAME + mode, "run_type": "iteration", **run(dataset, args.min_time)}
        results.append(result)
        print(f"{result['name']:<40} {result['real_time']:8.2f} ms {result['cpu_time']:8.2f} ms CPU "
              f"{result['iterations']:6d}   images/s={result['images/s']:.1f}")
    workers = [int(w) for w in args.workers.split(",") if w] if args.workers != "0" else []
    for w in workers:
        dataset = datasets.ImageFolder(args.folder, transform=transforms_for(transforms, "training"))
        name = f"ImageFolder/loader/3x224x224/training/workers:{w}"
        result = {"name": name, "run_name": name, "run_type": "iteration", **run_loader(torch, dataset, w, args.min_time)}
        results.append(result)
        print(f"{result['name']:<40} {result['real_time']:8.2f} ms per batch of 32   images/s={result['images/s']:.1f}")
    if args.json:
        try:
            write_json(args.json, context, results)
        except OSError as e:
            print(f"{PROG}: --json {args.json}: {e}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
