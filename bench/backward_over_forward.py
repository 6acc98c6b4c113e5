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
import statistics
import sys

from interleave import machine  # the CPU, as interleave.py records it
from results_io import (BadInput, check_output, check_programs, count, positive_float, positive_int, run_program,
                        write_json)


def round_times(bench, net, batch, threads, warmup, min_time):
    """{mode: seconds per iteration} for forward and forward_backward, one process."""
    command = [bench, "--device=cpu", f"--batch={batch}", f"--threads={threads}", f"--warmup={warmup}",
               f"--benchmark_min_time={min_time}", f"--benchmark_filter=^{net}/(forward|forward_backward)/",
               "--benchmark_format=json"]
    done = run_program(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"backward_over_forward.py: {' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    try:
        benchmarks = json.loads(done.stdout)["benchmarks"]
    except (ValueError, KeyError, TypeError):
        raise BadInput(f"{' '.join(command)} wrote no Google Benchmark JSON:\n{done.stdout[-2000:]}")
    times = {}
    for b in benchmarks:
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
    parser.add_argument("--rounds", type=positive_int, default=5)
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--warmup", type=count, default=3)
    parser.add_argument("--min-time", type=positive_float, default=1.0)
    parser.add_argument("--json", metavar="PATH", help="also write every round's times")
    args = parser.parse_args()
    cases = []
    for case in args.cases:
        net, _, batch = case.partition(":")
        if not net or not batch.isdigit() or int(batch) < 1:
            sys.exit(f"backward_over_forward.py: '{case}' is not NET:BATCH (e.g. ResNet18:16)")
        if (net, int(batch)) in cases:
            sys.exit(f"backward_over_forward.py: '{case}' is given twice")
        cases.append((net, int(batch)))
    # Before the rounds: a missing program or output folder found after them costs the rounds.
    check_programs([("--bench", args.bench)])
    if args.json:
        check_output(args.json, "--json")

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
        write_json(args.json, {"command": sys.argv, "machine": machine(), "rounds": rounds})


if __name__ == "__main__":
    try:
        main()
    except BadInput as e:
        sys.exit(f"backward_over_forward.py: {e}")
