#!/usr/bin/env python3
"""tools/plot_training.py: loss and accuracy curves from training logs.

Reads one or more JSON-lines logs as `glassbox train --log FILE` writes them
(bench/peers/pytorch_train.py --log writes the same lines), and draws, per
epoch, the training and test loss (left) and accuracy (right) of each, into
one PNG. With --steps, the per-step losses (glassbox train --log-every N)
are drawn under the epoch curves.

Usage:
  python3 tools/plot_training.py LOG [LOG ...] --out curves.png [--title TEXT] [--steps]
  (each LOG may be given as LABEL=PATH; the label defaults to the file name)

Needs matplotlib (pip install matplotlib), which Glassbox itself never needs.
"""

import argparse
import json
import os
import sys


def read_log(path):
    """(epochs, steps, start) from one log; a resumed run's lines append, and a
    later line for an epoch replaces an earlier one."""
    epochs, steps, start = {}, [], {}
    with open(path) as f:
        for number, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except json.JSONDecodeError as e:
                # A run killed mid-write leaves one unfinished line; say so and go on.
                print(f"plot_training.py: {path}:{number}: skipped, not JSON ({e.msg}): a run killed mid-line?",
                      file=sys.stderr)
                continue
            event = line.get("event")
            if event == "epoch":
                epochs[line["epoch"]] = line
            elif event == "step":
                steps.append(line)
            elif event == "start":
                start = line
    return [epochs[e] for e in sorted(epochs)], steps, start


def main():
    parser = argparse.ArgumentParser(prog="plot_training.py", description=__doc__.split("\n")[0])
    parser.add_argument("logs", nargs="+", metavar="[LABEL=]LOG")
    parser.add_argument("--out", required=True, help="the PNG to write")
    parser.add_argument("--title")
    parser.add_argument("--steps", action="store_true", help="also draw the per-step losses")
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        raise SystemExit("plot_training.py: needs matplotlib (pip install matplotlib)")

    figure, (loss_axes, accuracy_axes) = plt.subplots(1, 2, figsize=(12, 4.5))
    for entry in args.logs:
        label, path = entry.split("=", 1) if "=" in entry and not os.path.exists(entry) else (None, entry)
        epochs, steps, start = read_log(path)
        if not epochs:
            raise SystemExit(f"plot_training.py: {path} has no epoch lines")
        label = label or os.path.basename(path)
        x = [e["epoch"] for e in epochs]
        line, = loss_axes.plot(x, [e["train_loss"] for e in epochs], "o--", label=f"{label} train")
        colour = line.get_color()
        if "test_loss" in epochs[0]:
            loss_axes.plot(x, [e["test_loss"] for e in epochs], "o-", color=colour, label=f"{label} test")
        if args.steps and steps:
            per_epoch = epochs[0]["global_step"] / epochs[0]["epoch"]
            loss_axes.plot([s["global_step"] / per_epoch for s in steps], [s["loss"] for s in steps], "-",
                           color=colour, alpha=0.25, linewidth=0.8)
        accuracy_axes.plot(x, [100 * e["train_accuracy"] for e in epochs], "o--", color=colour,
                           label=f"{label} train")
        if "test_accuracy" in epochs[0]:
            accuracy_axes.plot(x, [100 * e["test_accuracy"] for e in epochs], "o-", color=colour,
                               label=f"{label} test")
    loss_axes.set(xlabel="epoch", ylabel="loss (cross-entropy)", title="loss")
    accuracy_axes.set(xlabel="epoch", ylabel="accuracy (%)", title="accuracy")
    for axes in (loss_axes, accuracy_axes):
        axes.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))  # epochs are whole
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
    figure.suptitle(args.title or ", ".join(os.path.basename(e.split("=")[-1]) for e in args.logs))
    figure.tight_layout()
    figure.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
