#!/usr/bin/env python3
"""bench/data_vs_pytorch.py: Glassbox's JPEG pipeline against PIL +
torchvision, interleaved round by round on the same machine and files.

Each round runs build/bench_data (TurboJPEG, data/image_folder.h, and the
Loader) and bench/peers/pytorch_data.py (torchvision's ImageFolder with PIL
and its ImageNet transforms, and a torch DataLoader), order swapped every
other round, on the same folder. Both report images/s under the same names:
  ImageFolder/load/3x224x224/{training,evaluation}   one worker, per sample
  ImageFolder/loader/3x224x224/training/workers:W    the whole pipeline, W workers
Prints the median over rounds of each side and their ratio (above 1:
Glassbox is faster); --json writes the rows and every round. A benchmark
that failed in a round (error_occurred) is named and left out of that
round; one that only one side reported is named under the table.

Usage:
  python3 bench/data_vs_pytorch.py --folder PATH [--bench-data build/bench_data]
      [--python PYTHON] [--rounds 3] [--min-time 2] [--workers 1,2] [--json PATH]
"""

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile

from results_io import (BadInput, check_benchmarks, check_output, check_programs, load_json, positive_float,
                        positive_int, run_program, write_json)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def rates(path, side, round_number):
    """{name: images/s} of one side's run; a benchmark that failed is named on stderr and left out."""
    data = load_json(path)
    if not isinstance(data, dict):
        raise BadInput(f"the {side} side wrote {path}, which is not Google Benchmark JSON")
    check_benchmarks(f"the {side} side's {path}", data.get("benchmarks"))
    found = {}
    for run in data["benchmarks"]:
        name = run["name"].removesuffix("/real_time")
        if run.get("error_occurred"):
            print(f"data_vs_pytorch.py: {side}'s {name} failed in round {round_number}, left out of it: "
                  f"{run.get('error_message', '?')}", file=sys.stderr)
        elif "images/s" in run:
            found[name] = run["images/s"]
    return found


def main():
    parser = argparse.ArgumentParser(prog="data_vs_pytorch.py", description=__doc__.split("\n")[0])
    parser.add_argument("--folder", required=True)
    parser.add_argument("--bench-data", default=os.path.join(REPO, "build", "bench_data"))
    parser.add_argument("--python", default=os.environ.get("GLASSBOX_PYTHON") or "python3",
                        help="the Python with PyTorch (default: $GLASSBOX_PYTHON, else python3)")
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--min-time", type=positive_float, default=2.0)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--json")
    args = parser.parse_args()
    # Before the rounds: what would stop them later.
    if not os.path.isdir(args.folder):
        raise BadInput(f"--folder {args.folder}: no such folder")
    check_programs([("--bench-data", args.bench_data), ("--python", args.python)])
    if args.json:
        check_output(args.json, "--json")
    sides = {"glassbox": [], "pytorch": []}
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(args.rounds):
            for side in (["glassbox", "pytorch"] if r % 2 == 0 else ["pytorch", "glassbox"]):
                out = os.path.join(scratch, f"{side}-{r}.json")
                if side == "glassbox":
                    command = [args.bench_data, f"--folder={args.folder}", f"--workers={args.workers}",
                               f"--benchmark_min_time={args.min_time}", f"--benchmark_out={out}"]
                else:
                    command = [args.python, os.path.join(HERE, "peers", "pytorch_data.py"), "--folder", args.folder,
                               "--min-time", str(args.min_time), "--workers", args.workers, "--json", out]
                print("+ " + " ".join(command), flush=True)
                done = run_program(command, stdout=subprocess.DEVNULL)
                if done.returncode != 0:
                    raise BadInput(f"{' '.join(command)} failed with exit status {done.returncode}")
                sides[side].append(rates(out, side, r + 1))
    measured = {side: list(dict.fromkeys(n for rnd in rounds for n in rnd)) for side, rounds in sides.items()}
    names = [name for name in measured["glassbox"] if name in measured["pytorch"]]
    rows = {}
    print(f"\n{args.folder}: {args.rounds} rounds interleaved, medians of images/s")
    print(f"{'benchmark':<48}{'Glassbox':>10}{'PyTorch':>10}{'ratio':>8}")
    for name in names:
        ours = statistics.median(r[name] for r in sides["glassbox"] if name in r)
        theirs = statistics.median(r[name] for r in sides["pytorch"] if name in r)
        rows[name] = {"glassbox": ours, "pytorch": theirs, "ratio": ours / theirs}
        print(f"{name:<48}{ours:>10.1f}{theirs:>10.1f}{ours / theirs:>8.2f}")
    for side, other, who in (("glassbox", "pytorch", "Glassbox"), ("pytorch", "glassbox", "PyTorch")):
        alone = [name for name in measured[side] if name not in measured[other]]
        if alone:
            print(f"only {who} measured, so no ratio: {', '.join(alone)}")
    if args.json:
        write_json(args.json, {"date": datetime.date.today().isoformat(),
                               "machine": platform.processor() or platform.machine(),
                               "command": " ".join(sys.argv), "rows": rows, "rounds": sides})
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BadInput as e:
        sys.exit(f"data_vs_pytorch.py: {e}")
