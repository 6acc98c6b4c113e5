#!/usr/bin/env python3
"""bench/gemm_vs_torch.py: Glassbox's CPU GEMM (build/bench_gemm: Eigen's
product on the build's kernels) against torch.matmul (bench/peers/
torch_gemm.py), shape by shape, alternating which side goes first every
round, at 2048^3 and at every im2col product of ResNet-50's and VGG16's
convolutions (issue 11's GEMM bar: at least 0.95 of torch.matmul).

For each shape and round both sides time the same product within seconds of
each other; the ratio of a shape is the median of its rounds' ratios
(Glassbox GFLOP/s over PyTorch's), so a slow phase of the machine that hits
both sides of a round cancels. Prints one row per shape, and the rounds'
ratios; --json writes every round after each one (an interrupted run keeps
what it measured).

Usage:
  python3 bench/gemm_vs_torch.py [--bench build/bench_gemm]
      [--python /work/venv-torch/bin/python] [--rounds 5] [--threads 2]
      [--min-time 0.5] [--nets ResNet50,VGG16] [--filter REGEX] [--json PATH]
"""

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def list_shapes(args, env):
    done = subprocess.run([args.bench, "--list-shapes", f"--nets={args.nets}"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=env)
    if done.returncode != 0:
        sys.exit(f"gemm_vs_torch.py: {args.bench} --list-shapes failed ({done.returncode}):\n"
                 f"{done.stdout.decode(errors='replace')}")
    shapes = []
    for line in done.stdout.decode().splitlines():
        mnk, _, layers = line.partition(" ")
        m, n, k = (int(v) for v in mnk.split(","))
        if re.search(args.filter, f"{m}x{n}x{k} {layers}"):
            shapes.append({"m": m, "n": n, "k": k, "layers": layers})
    if not shapes:
        sys.exit(f"gemm_vs_torch.py: no shape matches --filter {args.filter!r}")
    return shapes


def glassbox(args, shape, env):
    name = f"GEMM/{shape['m']}x{shape['n']}x{shape['k']}"
    command = [args.bench, f"--nets={args.nets}", f"--threads={args.threads}", f"--benchmark_filter=^{name}(/|$)",
               f"--benchmark_min_time={args.min_time}", "--benchmark_format=json"]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if done.returncode != 0:
        sys.exit(f"gemm_vs_torch.py: {' '.join(command)} failed ({done.returncode}):\n"
                 f"{done.stderr.decode(errors='replace')[-3000:]}")
    runs = [r for r in json.loads(done.stdout)["benchmarks"] if r["name"].startswith(name + "/")]
    if len(runs) != 1 or runs[0].get("error_occurred"):
        sys.exit(f"gemm_vs_torch.py: {name}: expected one result from {args.bench}, got {runs}")
    return runs[0]["GFLOP/s"], runs[0].get("label", "")


class Peer:
    """bench/peers/torch_gemm.py, started once, asked one shape at a time."""

    def __init__(self, args, env):
        command = [args.python, os.path.join(HERE, "peers", "torch_gemm.py"), "--threads", str(args.threads)]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.banner = self.process.stdout.readline().strip()
        if not self.banner.startswith("ready"):
            sys.exit(f"gemm_vs_torch.py: {' '.join(command)} did not start: {self.banner!r}")

    def gflops(self, shape, min_time):
        self.process.stdin.write(f"{shape['m']} {shape['n']} {shape['k']} {min_time}\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        try:
            return float(answer)
        except ValueError:
            sys.exit(f"gemm_vs_torch.py: the PyTorch peer answered {answer!r} for {shape}")

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def write_json(path, payload):
    with open(path + ".tmp", "w") as f:
        json.dump(payload, f, indent=1)
    os.replace(path + ".tmp", path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", default="build/bench_gemm")
    parser.add_argument("--python", default="/work/venv-torch/bin/python")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--nets", default="ResNet50,VGG16")
    parser.add_argument("--filter", default="", help="only shapes whose 'MxNxK layers' matches this regex")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))

    shapes = list_shapes(args, env)
    peer = Peer(args, env)
    print(f"PyTorch peer: {peer.banner}", file=sys.stderr)
    rounds = []  # per round: [{"glassbox": GFLOP/s, "pytorch": GFLOP/s, "label": ...} per shape]
    payload = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "command": sys.argv,
               "peer": peer.banner, "shapes": shapes, "rounds": rounds}
    for r in range(args.rounds):
        found = []
        for shape in shapes:
            if r % 2 == 0:
                ours, label = glassbox(args, shape, env)
                theirs = peer.gflops(shape, args.min_time)
            else:
                theirs = peer.gflops(shape, args.min_time)
                ours, label = glassbox(args, shape, env)
            found.append({"glassbox": ours, "pytorch": theirs, "label": label})
        rounds.append(found)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
        if args.json:
            write_json(args.json, payload)
    peer.close()

    print(f"{args.threads} threads, {args.rounds} rounds alternating sides, min time {args.min_time} s; "
          "GFLOP/s medians; ratio: the median of the rounds' Glassbox / PyTorch")
    header = f"{'m x n x k':18s} {'Glassbox':>9s} {'PyTorch':>9s} {'ratio':>6s}  {'rounds':24s} layers; Glassbox's kernel"
    print(header)
    print("-" * len(header))
    for i, shape in enumerate(shapes):
        ours = [rnd[i]["glassbox"] for rnd in rounds]
        theirs = [rnd[i]["pytorch"] for rnd in rounds]
        ratios = [o / t for o, t in zip(ours, theirs)]
        each = " ".join(f"{x:.2f}" for x in ratios)
        mnk = f"{shape['m']}x{shape['n']}x{shape['k']}"
        print(f"{mnk:18s} {statistics.median(ours):9.1f} {statistics.median(theirs):9.1f} "
              f"{statistics.median(ratios):6.2f}  {each:24s} {rounds[0][i]['label']}")


if __name__ == "__main__":
    main()
