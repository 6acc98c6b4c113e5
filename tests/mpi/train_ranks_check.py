#!/usr/bin/env python3
"""tests/mpi/train_ranks_check.py: `glassbox train` on 2 ranks against one process.

Two ranks at batch B, each on its shard of every epoch, take the steps that one
process takes at batch 2B (train/trainer.h), so their training loss, test loss
and test accuracy per epoch must agree with the one-process run's (to float
rounding: the all-reduce adds in another order). Every process runs one
thread (OMP_NUM_THREADS=1), as mpirun's binding to a core gives each rank
anyway: a product's blocks follow the thread count (Note [Blocks of a product
over the threads] in tensor/parallel_for.h), and sums grouped otherwise drift
apart by 1e-2 within these 80 steps (as do a rank's and the one process's
batches where they choose different kernels: RANK_BATCH). LeNet has no batch norm,
whose statistics would stay per rank. Fashion-MNIST comes from Debian's
dataset-fashion-mnist (tools/install_deps.sh). Run by CTest:

    train_ranks_check.py GLASSBOX MPIRUN [MPIRUN FLAGS...]
"""
import json
import math
import os
import subprocess
import sys
import tempfile

EPOCHS = 2
# A rank's batch: the ranks' 8 rows and the one process's 16 are both within
# the sizes up to which a linear layer streams its weights (16 rows, Note
# [Linear forward at small batches]), so both run the same kernels; at 16 and
# 32 they did not (streamed against the GEMM), and at 32 and 64 the sums of
# the weight gradients grouped otherwise: the runs drifted apart by 1e-2 and
# 1e-3 within these 80 steps, from rounding alone.
RANK_BATCH = 8
# Real data, a few steps per epoch: enough to learn (checked below), quick enough for CI.
COMMON = ["train", "LeNet", "--data", "fashion-mnist", "--epochs", str(EPOCHS), "--steps-per-epoch", "40",
          "--workers", "1", "--device", "cpu"]


def epochs_of(log_path):
    with open(log_path) as f:
        return [line for line in map(json.loads, f) if line.get("event") == "epoch"]


def run(command, log_path):
    one_thread = dict(os.environ, OMP_NUM_THREADS="1")
    result = subprocess.run(command + ["--log", log_path], capture_output=True, text=True, timeout=600, env=one_thread)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(command)} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def main():
    glassbox, mpirun = sys.argv[1], sys.argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        one_log, two_log = os.path.join(tmp, "one.jsonl"), os.path.join(tmp, "two.jsonl")
        run([glassbox] + COMMON + ["--batch", str(2 * RANK_BATCH)], one_log)
        out = run(mpirun + ["-np", "2", glassbox] + COMMON + ["--batch", str(RANK_BATCH)], two_log)
        if "data-parallel: 2 ranks" not in out:
            sys.exit(f"FAILED: rank 0 did not say it trains data-parallel:\n{out}")
        one, two = epochs_of(one_log), epochs_of(two_log)
        if len(one) != EPOCHS or len(two) != EPOCHS:
            sys.exit(f"FAILED: expected {EPOCHS} epoch lines, got {len(one)} and {len(two)} (one log per run: "
                     "only rank 0 writes it)")
        worst = 0.0
        for a, b in zip(one, two):
            if a["global_step"] != b["global_step"]:
                sys.exit(f"FAILED: epoch {a['epoch']}: {a['global_step']} steps in one process, "
                         f"{b['global_step']} on 2 ranks")
            for key in ("train_loss", "test_loss", "train_accuracy", "test_accuracy"):
                difference = abs(a[key] - b[key]) / max(1e-12, abs(a[key]))
                print(f"epoch {a['epoch']} {key}: one process {a[key]:.9g}, 2 ranks {b[key]:.9g} "
                      f"(relative difference {difference:.2g})")
                if not math.isfinite(difference):  # max() would keep the finite worst and pass a NaN
                    sys.exit(f"FAILED: epoch {a['epoch']} {key}: one process {a[key]}, 2 ranks {b[key]}")
                worst = max(worst, difference)
        if two[-1]["test_accuracy"] < 0.5:
            sys.exit(f"FAILED: 2 ranks reached only {two[-1]['test_accuracy']:.2%} test accuracy: they did not learn")
        if worst > 1e-4:
            sys.exit(f"FAILED: 2 ranks at batch {RANK_BATCH} differ from one process at batch {2 * RANK_BATCH} "
                     f"by {worst:.3g}")
        print(f"2 ranks at batch {RANK_BATCH} trained as one process at batch {2 * RANK_BATCH}")


if __name__ == "__main__":
    main()
