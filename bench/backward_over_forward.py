#!/usr/bin/env python3
"""bench/backward_over_forward.py: what a step's backward costs against its
forward on the CPU, over several rounds (issue 11 asks for at most 2.5).

Each round runs bench_nets once per network and batch with both modes in one
process (forward, then forward_backward, seconds apart), so that the two
times of one quotient see the same machine; the quotient is
forward_backward's time over forward's, minus one (the backward alone over
the forward, as bench/ratio_table.py's bwd/fwd column). On the shared 2-core
VM a single round's quotient moved by about 0.5 (docs/performance.md, stop
34), so the table gives the median over the rounds and each round's value.

  python3 bench/backward_over_forward.py --bench build-cpu/bench_nets --rounds 5 \\
      FCN5:32 ResNet18:16 Xception:1 Xception:2
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

from interleave import machine  # the CPU, as interleave.py records it


def round_times(bench, net, batch, threads, warmup, min_time):
    """{mode: seconds per iteration} for forward and forward_backward, one process."""
    command = [bench, "--device=cpu", f"--batch={batch}", f"--threads={threads}", f"--warmup={warmup}",
               f"--benchmark_min_time={min_time}", f"--benchmark_filter=^{net}/(forward|forward_backward)/",
               "--benchmark_format=json"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"backward_over_forward.py: {' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    times = {}
    for b in json.loads(done.stdout)["benchmarks"]:
        mode = b["name"].split("/")[1]
        if b.get("run_type", "iteration") == "iteration" and not b.get("error_occurred"):
            times[mode] = b["real_time"]  # one unit for both modes: the quotient needs no conversion
    if set(times) != {"forward", "forward_backward"}:
        sys.exit(f"backward_over_forward.py: {net} at batch {batch} did not report both modes: {sorted(times)}")
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", metavar="NET:BATCH")
    parser.add_argument("--bench", default="build-cpu/bench_nets")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--min-time", type=float, default=1.0)
    parser.add_argument("--json", metavar="PATH", help="also write every round's times")
    args = parser.parse_args()
    cases = []
    for case in args.cases:
        net, _, batch = case.partition(":")
        if not net or not batch.isdigit() or int(batch) < 1:
            sys.exit(f"backward_over_forward.py: '{case}' is not NET:BATCH (e.g. ResNet18:16)")
        cases.append((net, int(batch)))

    quotients = {case: [] for case in cases}
    rounds = []
    for r in range(args.rounds):
        for net, batch in cases:
            times = round_times(args.bench, net, batch, args.threads, args.warmup, args.min_time)
            quotients[(net, batch)].append(times["forward_backward"] / times["forward"] - 1)
            rounds.append({"round": r + 1, "net": net, "batch": batch, **times})
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    print(f"cpu, {args.threads} threads, {args.rounds} rounds; backward time over forward time "
          "(forward_backward / forward - 1)")
    print(f"{'network':14s} {'batch':>5s} {'median':>7s}  rounds")
    for (net, batch), values in quotients.items():
        print(f"{net:14s} {batch:5d} {statistics.median(values):7.2f}  " + " ".join(f"{v:.2f}" for v in values))
    if args.json:
        with open(args.json + ".tmp", "w") as f:
            json.dump({"command": sys.argv, "machine": machine(), "rounds": rounds}, f, indent=1)
        os.replace(args.json + ".tmp", args.json)  # whole or not at all


if __name__ == "__main__":
    main()
