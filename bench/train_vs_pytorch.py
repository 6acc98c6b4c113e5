#!/usr/bin/env python3
"""bench/train_vs_pytorch.py: `glassbox train` against the same training in
PyTorch (bench/peers/pytorch_train.py), interleaved round by round on the
same machine, so that both see the same load, clocks and thermal state.

Each round runs `glassbox train NET --data fashion-mnist --epochs E --log F`
and then the peer with the same network, data, batch and schedule, once per
--pipelines entry (order swapped every other round). Reported per side,
medians over the rounds: the test accuracy after the last epoch, the
training part of an epoch in seconds (mean over epochs), its images/s, and
the share of it spent waiting for data; then the ratio of images/s, Glassbox
over PyTorch (above 1: Glassbox is faster). --json writes the rows and
every epoch of every round. A log without epoch lines, or whose epochs
report no test accuracy (null: not a finite number) or no positive seconds
and images/s, stops the comparison, naming the side and the round.

Usage:
  python3 bench/train_vs_pytorch.py [--glassbox build/glassbox]
      [--python PYTHON] [--net LeNet] [--epochs 10]
      [--rounds 3] [--threads 2] [--workers 1] [--pipelines torchvision,tensors]
      [--json PATH]
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

from results_io import (BadInput, check_number, check_output, check_programs, count, positive_int, run_program,
                        write_json)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PIPELINES = ("torchvision", "tensors")  # bench/peers/pytorch_train.py --pipeline


def epochs_of(log_path):
    """The "epoch" lines of a glassbox-train-style JSON-lines log."""
    epochs = []
    try:
        with open(log_path, encoding="utf-8") as f:
            for text in f:
                line = json.loads(text) if text.strip() else {}
                if isinstance(line, dict) and line.get("event") == "epoch":
                    epochs.append(line)
    except (OSError, ValueError) as e:  # ValueError: not JSON, or not UTF-8
        raise BadInput(f"cannot read the log {log_path}: {e}")
    return epochs


def run(command, env):
    print("+ " + " ".join(command), flush=True)
    result = run_program(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout)
        raise SystemExit(f"train_vs_pytorch.py: {command[0]} failed with exit status {result.returncode}")
    return result.stdout


def summary(epochs, where):
    """A round's figures from its epoch lines; `where` names the side and round in a refusal."""
    if not epochs:
        raise BadInput(f"{where}: the log has no epoch lines")
    for e in epochs:
        at = f"{where}: epoch {e.get('epoch', '?')}"
        check_number(e.get("seconds"), f"{at}: \"seconds\"")
        check_number(e.get("images_per_second"), f"{at}: \"images_per_second\"")
        check_number(e.get("data_wait_seconds"), f"{at}: \"data_wait_seconds\"", above_zero=False)
    if epochs[-1].get("test_accuracy") is None:
        raise BadInput(f"{where}: the last epoch reports no test accuracy (null: not a finite number)")
    check_number(epochs[-1]["test_accuracy"], f"{where}: the last epoch's \"test_accuracy\"", above_zero=False)
    seconds = statistics.mean(e["seconds"] for e in epochs)
    return {"test_accuracy": epochs[-1]["test_accuracy"], "epoch_seconds": seconds,
            "images_per_second": statistics.mean(e["images_per_second"] for e in epochs),
            "data_share": statistics.mean(e["data_wait_seconds"] / e["seconds"] for e in epochs)}


def main():
    parser = argparse.ArgumentParser(prog="train_vs_pytorch.py", description=__doc__.split("\n")[0])
    parser.add_argument("--glassbox", default=os.path.join(REPO, "build", "glassbox"))
    parser.add_argument("--python", default=os.environ.get("GLASSBOX_PYTHON") or "python3",
                        help="the Python with PyTorch (default: $GLASSBOX_PYTHON, else python3)")
    parser.add_argument("--net", default="LeNet")
    parser.add_argument("--epochs", type=positive_int, default=10)
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--workers", type=count, default=1)
    parser.add_argument("--pipelines", default="torchvision,tensors", help="of " + ", ".join(PIPELINES))
    parser.add_argument("--json")
    args = parser.parse_args()
    pipelines = args.pipelines.split(",")
    for pipeline in pipelines:
        if pipeline not in PIPELINES:
            parser.error(f"--pipelines: {pipeline!r} is not one of {', '.join(PIPELINES)}")
        if pipelines.count(pipeline) > 1:  # its rounds would pile into one row
            parser.error(f"--pipelines: {pipeline} is given twice")
    # Before the rounds: what would stop them later.
    check_programs([("--glassbox", args.glassbox), ("--python", args.python)])
    if args.json:
        check_output(args.json, "--json")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    sides = ["glassbox"] + [f"pytorch/{p}" for p in pipelines]
    rounds = {side: [] for side in sides}
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(args.rounds):
            order = sides if r % 2 == 0 else list(reversed(sides))
            for side in order:
                log = os.path.join(scratch, f"{side.replace('/', '-')}-{r}.jsonl")
                if side == "glassbox":
                    run([args.glassbox, "train", args.net, "--data", "fashion-mnist", "--epochs", str(args.epochs),
                         "--workers", str(args.workers), "--device", "cpu", "--log", log], env)
                else:
                    run([args.python, os.path.join(HERE, "peers", "pytorch_train.py"), "--net", args.net,
                         "--epochs", str(args.epochs), "--threads", str(args.threads), "--workers",
                         str(args.workers if side.endswith("torchvision") else 0), "--pipeline",
                         side.split("/")[1], "--log", log], env)
                rounds[side].append(epochs_of(log))
                # A log that gives no figures stops the run here, not after every round.
                summary(rounds[side][-1], f"{side}, round {r + 1}")
    rows = {}
    for side in sides:
        per_round = [summary(epochs, f"{side}, round {r + 1}") for r, epochs in enumerate(rounds[side])]
        rows[side] = {key: statistics.median(s[key] for s in per_round) for key in per_round[0]}
    print(f"\n{args.net} on Fashion-MNIST, {args.epochs} epochs, {args.rounds} rounds interleaved, "
          f"{args.threads} threads, {args.workers} data workers; medians over rounds")
    print(f"{'side':<22}{'test acc':>10}{'epoch s':>10}{'images/s':>10}{'data wait':>11}{'ratio':>8}")
    base = rows["glassbox"]["images_per_second"]
    for side in sides:
        row = rows[side]
        ratio = base / row["images_per_second"]
        print(f"{side:<22}{100 * row['test_accuracy']:>9.2f}%{row['epoch_seconds']:>10.2f}"
              f"{row['images_per_second']:>10,.0f}{100 * row['data_share']:>10.1f}%{ratio:>8.2f}")
    print("ratio: Glassbox's images/s over that side's (above 1: Glassbox is faster)")
    if args.json:
        write_json(args.json, {"date": datetime.date.today().isoformat(),
                               "machine": platform.processor() or platform.machine(),
                               "command": " ".join(sys.argv), "rows": rows, "rounds": rounds})
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BadInput as e:
        sys.exit(f"train_vs_pytorch.py: {e}")
