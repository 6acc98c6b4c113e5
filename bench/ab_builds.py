#!/usr/bin/env python3
"""bench/ab_builds.py: two builds of bench_nets against each other, alternated.

What a change did, where interleave.py says how Glassbox stands against
PyTorch: for each network and batch, the two binaries run one after the
other (the order swapped every round, so neither always runs second on a
warmer or busier machine), and the table gives each benchmark's median
images/s over the rounds, new over base, and every round's figure (a
machine this noisy needs them read in pairs: rounds of one build can differ
by more than the change).

  git worktree add ../base HEAD~1 && cmake -S ../base -B ../base/build-base ... && \\
    cmake --build ../base/build-base --target bench_nets
  python3 bench/ab_builds.py --base ../base/build-base/bench_nets --new build-cpu/bench_nets \\
      --rounds 2 --modes forward_backward,train_step AlexNet:8 AlexNet:16 FCN5:32
"""
import argparse
import collections
import json
import statistics
import sys

from interleave import machine  # the CPU, as interleave.py records it
from results_io import BadInput, check_output, check_programs, count, positive_int, run_program, write_json


def run(exe, net, batch, modes, threads, warmup, min_time):
    command = [exe, "--device=cpu", f"--net={net}", f"--batch={batch}", f"--threads={threads}",
               f"--warmup={warmup}", f"--benchmark_min_time={min_time}",
               f"--benchmark_filter=^{net}/({'|'.join(modes)})/", "--benchmark_format=json"]
    out = run_program(command, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"ab_builds: {' '.join(command)} exited {out.returncode}:\n{out.stderr[-2000:]}")
    try:
        benchmarks = json.loads(out.stdout)["benchmarks"]
    except (ValueError, KeyError, TypeError):
        raise BadInput(f"{' '.join(command)} wrote no Google Benchmark JSON:\n{out.stdout[-2000:]}")
    # A language model counts tokens/s, the rest images/s.
    return {b["name"]: b.get("images/s", b.get("tokens/s")) for b in benchmarks}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="bench_nets before the change")
    parser.add_argument("--new", required=True, help="bench_nets after it")
    parser.add_argument("--rounds", type=positive_int, default=2)
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--warmup", type=count, default=3)
    parser.add_argument("--min-time", default="1", help="--benchmark_min_time, seconds")
    parser.add_argument("--modes", default="forward_backward,train_step")
    parser.add_argument("--json", help="also write every figure here")
    parser.add_argument("jobs", nargs="+", metavar="NET:BATCH")
    args = parser.parse_args()
    jobs = []
    for job in args.jobs:
        net, _, batch = job.partition(":")
        if not batch.isdigit():
            sys.exit(f"ab_builds: '{job}': expected NET:BATCH, as VGG16:2")
        if (net, int(batch)) in jobs:  # its figures would pile into one row, as if it had run twice the rounds
            sys.exit(f"ab_builds: '{job}' is given twice")
        jobs.append((net, int(batch)))
    modes = args.modes.split(",")
    # Before the rounds: a missing program or output folder found after them costs the rounds.
    check_programs([("--base", args.base), ("--new", args.new)])
    if args.json:
        check_output(args.json, "--json")

    figures = collections.defaultdict(lambda: {"base": [], "new": []})
    for r in range(args.rounds):
        order = [("base", args.base), ("new", args.new)]
        if r % 2:
            order.reverse()
        for net, batch in jobs:
            for tag, exe in order:
                for name, images in run(exe, net, batch, modes, args.threads, args.warmup, args.min_time).items():
                    figures[name][tag].append(images)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    print(f"cpu, {args.threads} threads, {args.rounds} alternated rounds, medians; images/s (a language model's: tokens/s)")
    print(f"{'benchmark':42} {'base':>10} {'new':>10} {'new/base':>8}  rounds (base | new)")
    for name, f in figures.items():
        base, new = statistics.median(f["base"]), statistics.median(f["new"])
        rounds = " ".join(f"{x:.2f}" for x in f["base"]) + " | " + " ".join(f"{x:.2f}" for x in f["new"])
        print(f"{name:42} {base:10.2f} {new:10.2f} {new / base:8.3f}  {rounds}")
    if args.json:
        write_json(args.json, {"command": sys.argv, "machine": machine(), "figures": figures})


if __name__ == "__main__":
    try:
        main()
    except BadInput as e:
        sys.exit(f"ab_builds: {e}")
