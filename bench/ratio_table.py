#!/usr/bin/env python3
"""bench/ratio_table.py: issue 11's table from bench/interleave.py's JSON
files (or bench/merge_results.py's, or a results file of bench/compare.py
--out, which reads as one round): one Markdown row per network and batch, the ratio (Glassbox's images/s,
a language model's tokens/s, over PyTorch's better layout) in each mode, and
Glassbox's backward over its forward (from the medians: forward_backward's
step less forward's, over forward's), then every ratio under --below
(default 1.0), with each round's ratio so that a reader sees how far the
rounds agree.

Several files may be given (a long run split into several commands, or
some networks run again after a change): a benchmark measured in more than
one takes its rounds from the last file given that has it. With
--pool-rounds it takes the rounds of every file that has it instead (two
one-round runs of the same build read as two rounds: say so only where
the code the benchmark runs is the same in both). A file that
interleave.py was still writing ("partial") counts with the rounds it has.
The table's first line names the builds the files record (Glassbox's commit,
PyTorch's version) and the machine they ran on (Note [One build per table]
in interleave.py), and says so where the files disagree: then it is not one
run's table.

--out FILE writes the Markdown to FILE instead of printing it, under a
line that names the command, so that a rerun regenerates it
(bench/results/<machine>/table.md from table.json).

Usage:
  python3 bench/ratio_table.py [--below 1.0] [--pool-rounds] [--out TABLE.md] RESULT.json [RESULT.json ...]
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interleave import BUILD_KEYS, LAYOUT_SUFFIX, benchmark_rates, rows_from_rounds  # noqa: E402  (after the path is set)

MODES = ["forward", "forward_backward", "train_step", "inference"]
MODE_HEADINGS = {"forward": "forward", "forward_backward": "fwd+bwd", "train_step": "train_step",
                 "inference": "inference"}


def is_comparison(data):
    """A results file of bench/compare.py --out: both sides' Google Benchmark runs."""
    return all(isinstance(data.get(side), dict) and isinstance(data[side].get("benchmarks"), list)
               for side in ("glassbox", "pytorch"))


def read(path):
    """An interleave.py or merge_results.py file as it is; a compare.py --out file
    as one round, with "builds" and "machine" from its two contexts."""
    with open(path) as f:
        data = json.load(f)
    if "rounds" not in data and is_comparison(data):
        contexts = {side: data[side].get("context", {}) for side in ("glassbox", "pytorch")}
        data = {"rounds": [{side: benchmark_rates(data[side]["benchmarks"]) for side in ("glassbox", "pytorch")}],
                "builds": {side: contexts[side].get(key, "unrecorded") for side, key in BUILD_KEYS.items()},
                "machine": contexts["glassbox"].get("device_name", "unrecorded")}
    return data


def load_rounds(paths, pool=False):
    """The rounds of each benchmark from the last file that measured it (pool:
    from every file that did, in the order given), and the networks in the
    order first given."""
    by_name, nets = {}, []  # Glassbox benchmark name -> its rounds
    for path in paths:
        data_rounds = read(path)["rounds"]
        for name in dict.fromkeys(n for rnd in data_rounds for n in rnd["glassbox"]):  # in order, once
            by_name[name] = by_name.get(name, []) + data_rounds if pool else data_rounds
            net = name.split("/")[0]
            if net not in nets:
                nets.append(net)
    # One list of rounds holding each benchmark's own: round i of each merged.
    rounds = []
    for name, file_rounds in by_name.items():
        for i, rnd in enumerate(file_rounds):
            if i == len(rounds):
                rounds.append({"glassbox": {}, "pytorch": {}})
            if name in rnd["glassbox"]:
                rounds[i]["glassbox"][name] = rnd["glassbox"][name]
            for peer in (name, name + LAYOUT_SUFFIX):
                if peer in rnd["pytorch"]:
                    rounds[i]["pytorch"][peer] = rnd["pytorch"][peer]
    return rounds, nets


def builds_line(paths):
    """What the files ran and where, from interleave.py's "builds" and "machine"
    (older files: unrecorded); one line, or the groups where the files differ."""
    builds, machines = {}, {}  # (Glassbox, PyTorch) or machine -> the files that ran them
    for path in paths:
        data = read(path)
        ran = data.get("builds", {})
        key = (ran.get("glassbox", "unrecorded"), ran.get("pytorch", "unrecorded"))
        builds.setdefault(key, []).append(os.path.basename(path))
        machines.setdefault(data.get("machine", "unrecorded"), []).append(os.path.basename(path))
    parts = []
    if len(builds) == 1:
        (glassbox, pytorch), = builds
        parts.append(f"Glassbox {glassbox}, PyTorch {pytorch}")
    else:
        parts.append("NOT one build; " + "; ".join(f"Glassbox {g}, PyTorch {p}: {', '.join(files)}"
                                                   for (g, p), files in builds.items()))
    if len(machines) == 1:
        where, = machines
        parts.append(f"on {where}" if where != "unrecorded" else "machine unrecorded")
    else:
        parts.append("NOT one machine; " + "; ".join(f"{m}: {', '.join(files)}" for m, files in machines.items()))
    every = f" (all {len(paths)} files)" if len(paths) > 1 and len(builds) == len(machines) == 1 else ""
    return ", ".join(parts) + every


def round_ratios(rounds, name):
    """Each round's ratio for one benchmark (against that round's better layout)."""
    ratios = []
    for rnd in rounds:
        ours = rnd["glassbox"].get(name)
        theirs = [v for v in (rnd["pytorch"].get(name), rnd["pytorch"].get(name + LAYOUT_SUFFIX)) if v]
        if ours and theirs:
            ratios.append(ours / max(theirs))
    return ratios


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", metavar="RESULT.json")
    parser.add_argument("--below", type=float, default=1.0, help="list every ratio under this (default 1.0)")
    parser.add_argument("--pool-rounds", action="store_true",
                        help="a benchmark in several files takes the rounds of all of them, not of the last")
    parser.add_argument("--out", metavar="TABLE.md", help="write the Markdown here instead of printing it")
    args = parser.parse_args()
    rounds, nets = load_rounds(args.files, pool=args.pool_rounds)
    rows = rows_from_rounds(rounds, nets)

    table, rates = {}, {}  # (net, batch) -> {mode: ratio}, {mode: Glassbox's images/s}
    for row in rows:
        net, mode, batch = row["name"].split("/")[:3]
        if len(row["name"].split("/")) > 3 or mode not in MODES:
            continue  # tf32, real data, ranks: not this table's
        key = (net, int(batch.split(":")[1]))
        table.setdefault(key, {})[mode] = row["ratio"]
        rates.setdefault(key, {})[mode] = row["glassbox_images_per_s"]

    def backward_over_forward(key):
        forward, both = rates[key].get("forward"), rates[key].get("forward_backward")
        return f"{forward / both - 1:.2f}" if forward and both else ""

    lines = [builds_line(args.files), ""]
    lines.append("| network | batch | " + " | ".join(MODE_HEADINGS[m] for m in MODES) + " | bwd/fwd |")
    lines.append("|---|---:|" + "---:|" * (len(MODES) + 1))
    for key, ratios in sorted(table.items(), key=lambda item: (nets.index(item[0][0]), item[0][1])):
        cells = [f"{ratios[m]:.2f}" if ratios.get(m) else "" for m in MODES]
        lines.append(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + f" | {backward_over_forward(key)} |")

    low = [row for row in rows if row["ratio"] is not None and row["ratio"] < args.below]
    lines.append(f"\n{len(low)} of {len(rows)} ratios under {args.below}" + (":" if low else "."))
    for row in low:
        each = ", ".join(f"{r:.2f}" for r in round_ratios(rounds, row["name"]))
        lines.append(f"- {row['name']}: {row['ratio']:.2f} (rounds: {each}; PyTorch {row['pytorch_layout']})")
    if not args.out:
        print("\n".join(lines))
        return
    command = " ".join(["python3", "bench/ratio_table.py"] + sys.argv[1:])
    with open(args.out, "w") as f:
        f.write(f"<!-- Made by `{command}`; run it again to remake this file. -->\n\n"
                "Glassbox's images/s (a language model's: tokens/s) over PyTorch's better layout, the medians of "
                "the rounds; above 1.0 Glassbox is faster. bwd/fwd: Glassbox's backward over its forward.\n\n"
                + "\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
