#!/usr/bin/env python3
"""bench/batch_scaling.py: where Glassbox's images/s falls as the batch grows,
from bench/interleave.py's JSON files (the medians over rounds, as
bench/ratio_table.py reads them), beside PyTorch's over the same batches.

Issue 11 asks that images/s not fall with the batch until memory bandwidth
explains why. A fall that PyTorch shows too, on the same machine in the same
run, is the machine's (a batch's activations outgrowing the cache); a fall
of Glassbox's alone is its own to find. One line per network and mode whose
Glassbox images/s falls by more than --tolerance (default 3%) from one
batch to the next larger: each batch's images/s over the smallest batch's,
for both sides (PyTorch: its better layout at each batch). A name that
goes on after the batch (LeNet/forward/batch:8/bf16) makes a series of its
own ("LeNet (bf16)"); a row in no mode of the table, or without a Glassbox
figure, is named on stderr. Files are read and checked as
bench/ratio_table.py reads them: several files whose runs had different
settings (--threads, --device, --precision, ...) or environments are
refused, exit status 1, naming the setting, since one series would mix
them. Standard library only.

Usage:
  python3 bench/batch_scaling.py [--tolerance 0.03] [--all] [--pool-rounds] RESULT.json [RESULT.json ...]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interleave import rows_from_rounds  # noqa: E402  (after the path is set)
from ratio_table import MODES, load_rounds, one_table  # noqa: E402
from results_io import BadInput  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", metavar="RESULT.json")
    parser.add_argument("--tolerance", type=float, default=0.03,
                        help="list a network and mode whose images/s falls by more than this (default 0.03)")
    parser.add_argument("--all", action="store_true", help="list every network and mode")
    parser.add_argument("--pool-rounds", action="store_true", help="as bench/ratio_table.py's")
    args = parser.parse_args()
    busy_above = one_table(args.files)
    rounds, nets = load_rounds(args.files, pool=args.pool_rounds)

    # A series per network, variant (what the name adds after the batch: a
    # precision, /real_data) and mode; a row that fits none is named.
    series = {}  # (net, variant, mode) -> {batch: (Glassbox's images/s, PyTorch's)}
    for row in rows_from_rounds(rounds, nets, busy_above):
        net, mode, batch, *variant = row["name"].split("/")
        if mode not in MODES or not row["glassbox_images_per_s"]:
            why = f"no mode '{mode}' ({', '.join(MODES)})" if mode not in MODES else "no Glassbox figure"
            print(f"batch_scaling.py: {row['name']}: not in the table: {why}", file=sys.stderr)
            continue
        series.setdefault((net, "/".join(variant), mode), {})[int(batch.split(":")[1])] = (
            row["glassbox_images_per_s"], row["pytorch_images_per_s"])

    print("| network | mode | batches | Glassbox, over the smallest batch | PyTorch, over the smallest batch |")
    print("|---|---|---|---|---|")
    listed = 0
    for (net, variant, mode), by_batch in sorted(series.items(), key=lambda item: (
            nets.index(item[0][0]), item[0][1], MODES.index(item[0][2]))):
        batches = sorted(by_batch)
        ours = [by_batch[b][0] for b in batches]
        falls = any(later < earlier * (1 - args.tolerance) for earlier, later in zip(ours, ours[1:]))
        if len(batches) < 2 or not (falls or args.all):
            continue
        listed += 1
        theirs = [by_batch[b][1] for b in batches]
        ours_text = " / ".join(f"{v / ours[0]:.2f}" for v in ours)
        theirs_text = " / ".join(f"{v / theirs[0]:.2f}" for v in theirs) if all(theirs) else "-"
        label = f"{net} ({variant})" if variant else net
        print(f"| {label} | {mode} | {' / '.join(map(str, batches))} | {ours_text} | {theirs_text} |")
    print(f"\n{listed} of {len(series)} networks and modes listed"
          + ("." if args.all else f" (Glassbox's images/s falls by more than {args.tolerance:.0%} at a larger batch)."))


if __name__ == "__main__":
    try:
        main()
    except BadInput as e:
        sys.exit(f"batch_scaling.py: {e}")
