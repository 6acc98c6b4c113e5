#!/usr/bin/env python3
"""bench/onednn_verbose_sum.py: where a CPU step's oneDNN time goes, from the
log of a run with ONEDNN_VERBOSE=1, Glassbox's or PyTorch's alike.

    ONEDNN_VERBOSE=1 build-cpu/glassbox time VGG16 --batch 1 --inference --threads 2 > gb.log
    ONEDNN_VERBOSE=1 python3 bench/peers/pytorch_nets.py --device cpu --threads 2 \\
        --batch 1 --layouts channels_last --filter '^VGG16/inference/' > pt.log
    python3 bench/onednn_verbose_sum.py gb.log --steps-from mb1_ic3oc64

Sums the execution lines by primitive kind, implementation, propagation kind
and problem, and prints milliseconds and calls per step, largest first, then
the totals by kind (convolution, reorder, ...). Steps: --steps N, or
--steps-from TEXT, the number of executions whose problem contains TEXT (a
primitive that runs once per step, such as the first convolution), which
counts warm-up and timed steps alike, as the log does. Standard library only.
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_io import count, positive_float  # noqa: E402  (after the path is set)


def executions(path):
    """(kind, implementation, propagation, problem, ms) of each exec line."""
    with open(path, errors="replace") as log:
        for line in log:
            if not line.startswith("onednn_verbose") or ",exec," not in line:
                continue
            fields = line.rstrip("\n").split(",")
            try:
                ms = float(fields[-1])
                at = fields.index("exec")
                yield fields[at + 2], fields[at + 3], fields[at + 4], fields[-2], ms
            except (ValueError, IndexError):
                continue  # a line cut short, or another format: not counted


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log")
    parser.add_argument("--steps", type=positive_float, help="steps the log holds (default 1)")
    parser.add_argument("--steps-from", metavar="TEXT")
    parser.add_argument("--top", type=count, default=30)
    args = parser.parse_args()
    rows = collections.defaultdict(lambda: [0, 0.0])
    by_kind = collections.defaultdict(float)
    try:
        for kind, implementation, propagation, problem, ms in executions(args.log):
            row = rows[(kind, implementation, propagation, problem)]
            row[0] += 1
            row[1] += ms
            by_kind[kind] += ms
    except OSError as e:
        sys.exit(f"onednn_verbose_sum.py: cannot read {args.log}: {e.strerror or e}")
    if not rows:
        sys.exit(f"onednn_verbose_sum.py: {args.log}: no oneDNN execution lines (was ONEDNN_VERBOSE=1 set?)")
    steps = args.steps if args.steps is not None else 1.0
    if args.steps_from:
        steps = sum(n for key, (n, _) in rows.items() if args.steps_from in key[3])
        if steps == 0:
            sys.exit(f"onednn_verbose_sum.py: {args.log}: no execution's problem contains '{args.steps_from}'")
    print(f"{args.log}: {sum(by_kind.values()) / steps:.2f} ms of oneDNN per step ({steps:g} steps)")
    for (kind, implementation, propagation, problem), (n, ms) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:args.top]:
        print(f"{ms / steps:9.3f} ms {n / steps:5.1f}x  {kind:<12} {implementation:<26} {propagation:<18} {problem}")
    for kind, ms in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"{ms / steps:9.3f} ms  all {kind}")


if __name__ == "__main__":
    main()
