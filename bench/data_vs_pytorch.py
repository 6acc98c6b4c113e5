#!/usr/bin/env python3
"""bench/data_vs_pytorch.py: Glassbox's JPEG pipeline against PIL +
torchvision, interleaved round by round on the same machine and files.

Each round runs build/bench_data (TurboJPEG, data/image_folder.h, and the
Loader) and bench/peers/pytorch_data.py (torchvision's ImageFolder with PIL
and its ImageNet transforms, and a torch DataLoader), order swapped every
other round, on the same folder. Both report images/s under the same names:
  ImageFolder/load/3x224x224/{training,evaluation}   one worker, per sample
  ImageFolder/loader/3x224x224/training/workers:W    the whole pipeline, W workers
Prints the median over rounds of each side and their ratio (above 1:
Glassbox is faster); --json writes the rows and every round.

Usage:
  python3 bench/data_vs_pytorch.py --folder PATH [--bench-data build/bench_data]
      [--python PYTHON] [--rounds 3] [--min-time 2] [--workers 1,2] [--json PATH]
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def rates(path):
    with open(path) as f:
        runs = json.load(f)["benchmarks"]
    return {run["name"].removesuffix("/real_time"): run["images/s"] for run in runs if "images/s" in run}


def main():
    parser = argparse.ArgumentParser(prog="data_vs_pytorch.py", description=__doc__.split("\n")[0])
    parser.add_argument("--folder", required=True)
    parser.add_argument("--bench-data", default=os.path.join(REPO, "build", "bench_data"))
    parser.add_argument("--python", default=os.environ.get("GLASSBOX_PYTHON") or "python3",
                        help="the Python with PyTorch (default: $GLASSBOX_PYTHON, else python3)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-time", type=float, default=2.0)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--json")
    args = parser.parse_args()
    sides = {"glassbox": [], "pytorch": []}
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(args.rounds):
            for side in (["glassbox", "pytorch"] if r % 2 == 0 else ["pytorch", "glassbox"]):
                out = os.path.join(scratch, f"{side}-{r}.json")
                if side == "glassbox":
                    command = [args.bench_data, f"--folder={args.folder}", f"--workers={args.workers}",
                               f"--benchmark_min_time={args.min_time}", f"--benchmark_out={out}"]
                else:
                    command = [args.python, os.path.join(HERE, "peers", "pytorch_data.py"), "--folder", args.folder,
                               "--min-time", str(args.min_time), "--workers", args.workers, "--json", out]
                print("+ " + " ".join(command), flush=True)
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
                sides[side].append(rates(out))
    names = [name for name in sides["glassbox"][0] if name in sides["pytorch"][0]]
    rows = {}
    print(f"\n{args.folder}: {args.rounds} rounds interleaved, medians of images/s")
    print(f"{'benchmark':<48}{'Glassbox':>10}{'PyTorch':>10}{'ratio':>8}")
    for name in names:
        ours = statistics.median(r[name] for r in sides["glassbox"])
        theirs = statistics.median(r[name] for r in sides["pytorch"])
        rows[name] = {"glassbox": ours, "pytorch": theirs, "ratio": ours / theirs}
        print(f"{name:<48}{ours:>10.1f}{theirs:>10.1f}{ours / theirs:>8.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": datetime.date.today().isoformat(), "machine": platform.processor() or platform.machine(),
                       "command": " ".join(sys.argv), "rows": rows, "rounds": sides}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
