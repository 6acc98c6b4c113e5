#!/usr/bin/env python3
"""bench/ratio_table.py: issue 11's table from bench/interleave.py's JSON
files: one Markdown row per network and batch, the ratio (Glassbox's images/s,
a language model's tokens/s, over PyTorch's better layout) in each mode, then
every ratio under --below (default 1.0), with each round's ratio so that a
reader sees how far the rounds agree.

Several files may be given (a long run split into several commands); a
benchmark measured in more than one takes its rounds from all of them. A
file that interleave.py was still writing ("partial") counts with the rounds
it has.

Usage:
  python3 bench/ratio_table.py [--below 1.0] RESULT.json [RESULT.json ...]
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interleave import LAYOUT_SUFFIX, rows_from_rounds  # noqa: E402  (after the path is set)

MODES = ["forward", "forward_backward", "train_step", "inference"]
MODE_HEADINGS = {"forward": "forward", "forward_backward": "fwd+bwd", "train_step": "train_step",
                 "inference": "inference"}


def load_rounds(paths):
    """Every round of every file, and the networks in the order first given."""
    rounds, nets = [], []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        rounds += data["rounds"]
        for name in (n for rnd in data["rounds"] for n in rnd["glassbox"]):
            net = name.split("/")[0]
            if net not in nets:
                nets.append(net)
    return rounds, nets


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
    args = parser.parse_args()
    rounds, nets = load_rounds(args.files)
    rows = rows_from_rounds(rounds, nets)

    table = {}  # (net, batch) -> {mode: ratio}
    for row in rows:
        net, mode, batch = row["name"].split("/")[:3]
        if len(row["name"].split("/")) > 3 or mode not in MODES:
            continue  # tf32, real data, ranks: not this table's
        table.setdefault((net, int(batch.split(":")[1])), {})[mode] = row["ratio"]

    print("| network | batch | " + " | ".join(MODE_HEADINGS[m] for m in MODES) + " |")
    print("|---|---:|" + "---:|" * len(MODES))
    for (net, batch), ratios in sorted(table.items(), key=lambda item: (nets.index(item[0][0]), item[0][1])):
        cells = [f"{ratios[m]:.2f}" if ratios.get(m) else "" for m in MODES]
        print(f"| {net} | {batch} | " + " | ".join(cells) + " |")

    low = [row for row in rows if row["ratio"] is not None and row["ratio"] < args.below]
    print(f"\n{len(low)} of {len(rows)} ratios under {args.below}" + (":" if low else "."))
    for row in low:
        each = ", ".join(f"{r:.2f}" for r in round_ratios(rounds, row["name"]))
        print(f"- {row['name']}: {row['ratio']:.2f} (rounds: {each}; PyTorch {row['pytorch_layout']})")


if __name__ == "__main__":
    main()
