#!/usr/bin/env python3
"""bench/gemm_vs_torch.py: Glassbox's CPU GEMM (build/bench_gemm: Eigen's
product on the build's kernels) against torch.matmul (bench/peers/
torch_gemm.py), shape by shape, alternating which side goes first every
round, at 2048^3 and at every im2col product of ResNet-50's and VGG16's
convolutions (issue 11's GEMM bar: at least 0.95 of torch.matmul).

Both sides stay running (bench_gemm --serve, torch_gemm.py) and time the
same product in short windows (--window seconds of products repeated), taking
turns: a round of a shape is --pairs windows each, the first side swapped
every pair, and its ratio the median of the pairs' ratios (Glassbox GFLOP/s
over PyTorch's, windows a fraction of a second apart), so that the machine's
slow phases, which on a shared 2-core VM come and go within seconds, hit
both sides of a pair alike. A shape's ratio is the median of its rounds'.
Prints one row per shape, with each round's ratio; --json writes every round
after each one (an interrupted run keeps what it measured). A side that
answers a rate that is not a finite number above 0 stops the run, naming
the side and the shape; a missing program, a --filter that is not a
regular expression and a --json in a missing folder stop it before it starts.

Usage:
  python3 bench/gemm_vs_torch.py [--bench build/bench_gemm]
      [--python PYTHON] [--rounds 3] [--pairs 5] [--window 0.2]
      [--threads 2] [--nets ResNet50,VGG16] [--filter REGEX] [--json PATH]
"""

import argparse
import datetime
import math
import os
import re
import statistics
import subprocess
import sys

from interleave import machine  # the CPU, as interleave.py records it
from results_io import (BadInput, check_output, check_programs, positive_float, positive_int, run_program,
                        write_json)

HERE = os.path.dirname(os.path.abspath(__file__))


def list_shapes(args, env):
    done = run_program([args.bench, "--list-shapes", f"--nets={args.nets}"], stdout=subprocess.PIPE,
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


class Server:
    """A side that stays running and times one shape per request line:
    "m n k seconds" in, "GFLOP/s [library]" out, after a "ready: ..." line."""

    def __init__(self, command, env):
        self.command = command
        try:
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                            env=env)
        except OSError as e:
            raise BadInput(f"cannot run {command[0]}: {e.strerror or e}")
        self.banner = self.process.stdout.readline().strip()
        if not self.banner.startswith("ready"):
            sys.exit(f"gemm_vs_torch.py: {' '.join(command)} did not start: {self.banner!r}")

    def time(self, shape, seconds):
        """(GFLOP/s, the library's name or "") of products repeated for `seconds`."""
        self.process.stdin.write(f"{shape['m']} {shape['n']} {shape['k']} {seconds}\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        rate, _, library = answer.partition(" ")
        try:
            value = float(rate)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:  # a ratio of it would be nan, negative or a division by 0
            raise BadInput(f"{' '.join(self.command)} answered {answer!r} for {shape['m']}x{shape['n']}x{shape['k']}: "
                           "not a rate above 0 GFLOP/s")
        return value, library

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", default="build/bench_gemm")
    parser.add_argument("--python", default=os.environ.get("GLASSBOX_PYTHON") or "python3",
                        help="the Python with PyTorch (default: $GLASSBOX_PYTHON, else python3)")
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--pairs", type=positive_int, default=5, help="windows of each side per shape and round")
    parser.add_argument("--window", type=positive_float, default=0.2,
                        help="seconds of one side's products per window")
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--nets", default="ResNet50,VGG16")
    parser.add_argument("--filter", default="", help="only shapes whose 'MxNxK layers' matches this regex")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    try:
        re.compile(args.filter)
    except re.error as e:
        parser.error(f"--filter {args.filter!r} is not a regular expression: {e}")
    check_programs([("--bench", args.bench), ("--python", args.python)])
    if args.json:
        check_output(args.json, "--json")
    shapes = list_shapes(args, env)
    ours = Server([args.bench, "--serve", f"--threads={args.threads}"], env)
    theirs = Server([args.python, os.path.join(HERE, "peers", "torch_gemm.py"), "--threads", str(args.threads)], env)
    print(f"Glassbox: {ours.banner}\nPyTorch: {theirs.banner}\nMachine: {machine()}", file=sys.stderr)
    rounds = []  # per round, per shape: {"glassbox": [GFLOP/s per window], "pytorch": [...], "library": ...}
    payload = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "command": sys.argv, "machine": machine(),
               "glassbox": ours.banner, "pytorch": theirs.banner, "shapes": shapes, "rounds": rounds}
    for r in range(args.rounds):
        found = []
        for shape in shapes:
            ours.time(shape, args.window)  # untimed: each side's operands made, first products run
            theirs.time(shape, args.window)
            windows = {"glassbox": [], "pytorch": [], "library": ""}
            for pair in range(args.pairs):
                sides = [("glassbox", ours), ("pytorch", theirs)]
                for side, server in (sides if (r + pair) % 2 == 0 else sides[::-1]):
                    rate, library = server.time(shape, args.window)
                    windows[side].append(rate)
                    windows["library"] = windows["library"] or library
            found.append(windows)
        rounds.append(found)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
        if args.json:
            write_json(args.json, payload)
    ours.close()
    theirs.close()

    def pair_ratio(windows):
        return statistics.median(g / t for g, t in zip(windows["glassbox"], windows["pytorch"]))

    print(f"{args.threads} threads, {args.rounds} rounds of {args.pairs} alternating {args.window} s windows per "
          "shape; GFLOP/s medians over all windows; ratio: the median of the rounds' (each the median of its "
          "pairs' Glassbox / PyTorch)")
    header = f"{'m x n x k':16s} {'Glassbox':>9s} {'PyTorch':>9s} {'ratio':>6s}  {'rounds':16s} library: layers"
    print(header)
    print("-" * len(header))
    for i, shape in enumerate(shapes):
        per_round = [pair_ratio(rnd[i]) for rnd in rounds]
        g = statistics.median(x for rnd in rounds for x in rnd[i]["glassbox"])
        t = statistics.median(x for rnd in rounds for x in rnd[i]["pytorch"])
        each = " ".join(f"{x:.2f}" for x in per_round)
        mnk = f"{shape['m']}x{shape['n']}x{shape['k']}"
        print(f"{mnk:16s} {g:9.1f} {t:9.1f} {statistics.median(per_round):6.2f}  {each:16s} "
              f"{rounds[0][i]['library']}: {shape['layers']}")


if __name__ == "__main__":
    try:
        main()
    except BadInput as e:
        sys.exit(f"gemm_vs_torch.py: {e}")
