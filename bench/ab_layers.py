#!/usr/bin/env python3
"""bench/ab_layers.py: two sets of `glassbox time` flags, or two builds, layer by layer.

What a CPU option or a change changes, pass by pass, where bench/ab_builds.py
compares whole steps of two builds: each round runs `glassbox time NET --json` once
with each flag set (the order swapped every round, so neither always runs on
a warmer or busier machine), and the table gives, for every layer and pass
that moved by more than --show (default 15%) between the two medians, the
median ms of each side and every round's figure; then each layer type's
summed passes and the step.

  python3 bench/ab_layers.py ResNet34 32 --rounds 2 --a=--no-winograd --b=""
  python3 bench/ab_layers.py ResNet34 16 --rounds 3 --glassbox OLD/glassbox --glassbox-b build-cpu/glassbox

(A flag set that starts with "--" needs the "=" form, as argparse reads it.)
"""
import argparse
import collections
import json
import os
import shlex
import statistics
import sys
import tempfile

from results_io import BadInput, check_programs, count, positive_int, run_program


def run_once(glassbox, net, batch, flags, threads, steps, warmup):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "time.json")
        command = [glassbox, "time", net, "--batch", str(batch), "--device", "cpu", "--steps", str(steps),
                   "--warmup", str(warmup), "--json", path] + shlex.split(flags)
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        out = run_program(command, capture_output=True, text=True, env=env)
        if out.returncode != 0:
            sys.exit(f"ab_layers: {' '.join(command)} exited {out.returncode}:\n{out.stderr[-2000:]}")
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError) as e:
            raise BadInput(f"{' '.join(command)} wrote no `glassbox time --json` file ({e})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("net")
    parser.add_argument("batch", type=positive_int)
    parser.add_argument("--a", default="", help="flags of side A (default none)")
    parser.add_argument("--b", default="", help="flags of side B (default none)")
    parser.add_argument("--rounds", type=positive_int, default=2)
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--steps", type=positive_int, default=2)
    parser.add_argument("--warmup", type=count, default=1)
    parser.add_argument("--show", type=float, default=0.15, help="show passes whose medians differ by this share")
    parser.add_argument("--glassbox", default="build-cpu/glassbox", help="the build side A runs")
    parser.add_argument("--glassbox-b", help="the build side B runs (default: --glassbox)")
    args = parser.parse_args()

    sides = {"A": args.a, "B": args.b}
    builds = {"A": args.glassbox, "B": args.glassbox_b or args.glassbox}
    check_programs([("--glassbox", builds["A"]), ("--glassbox-b", builds["B"])])
    times = collections.defaultdict(lambda: collections.defaultdict(list))  # (layer, type, pass) -> side -> ms
    steps = collections.defaultdict(list)
    for round_index in range(args.rounds):
        order = ["A", "B"] if round_index % 2 == 0 else ["B", "A"]
        for side in order:
            result = run_once(builds[side], args.net, args.batch, sides[side], args.threads, args.steps, args.warmup)
            steps[side].append(result["step_ms"])
            for layer in result["layers"]:
                for p in layer["passes"]:
                    times[(layer["name"], layer["type"], layer["output"], p["pass"])][side].append(p["ms"])

    median = statistics.median
    print(f"{args.net} batch {args.batch}, {args.threads} threads, {args.rounds} rounds; "
          f"A: {builds['A']} '{args.a}', B: {builds['B']} '{args.b}'; ms, medians (every round)")
    totals = collections.defaultdict(lambda: collections.defaultdict(float))
    for (name, kind, output, pass_name), by_side in times.items():
        a, b = median(by_side["A"]), median(by_side["B"])
        totals[(kind, pass_name)]["A"] += a
        totals[(kind, pass_name)]["B"] += b
        if abs(a - b) > args.show * max(min(a, b), 1e-9):
            rounds = lambda side: ", ".join(f"{v:.2f}" for v in by_side[side])
            print(f"  {name:28s} {output:20s} {pass_name:17s} A {a:8.2f} ({rounds('A')})  B {b:8.2f} ({rounds('B')})")
    print("by layer type and pass:")
    for (kind, pass_name), by_side in sorted(totals.items(), key=lambda item: -item[1]["A"]):
        if by_side["A"] >= 1.0 or by_side["B"] >= 1.0:
            print(f"  {kind:20s} {pass_name:17s} A {by_side['A']:9.1f}  B {by_side['B']:9.1f}  B/A {by_side['B'] / by_side['A']:.2f}")
    a_steps, b_steps = ", ".join(f"{v:.1f}" for v in steps["A"]), ", ".join(f"{v:.1f}" for v in steps["B"])
    print(f"step: A {median(steps['A']):.1f} ({a_steps})  B {median(steps['B']):.1f} ({b_steps})")


if __name__ == "__main__":
    try:
        main()
    except BadInput as e:
        sys.exit(f"ab_layers: {e}")
