#!/usr/bin/env python3
"""bench/merge_results.py: several bench/interleave.py JSON files (one table
run in parts: a network a file, or more rounds of some rows) merged into one
file of interleave.py's own shape, so that bench/ratio_table.py,
bench/batch_scaling.py and bench/compare.py read the whole table from it.

A benchmark measured in more than one file takes its rounds from the last
file given that has it; with --pool-rounds, the rounds of every file that has
it, in the order given (as bench/ratio_table.py --pool-rounds reads the same
files: the merged file's table is that command's table). A file that
interleave.py was still writing ("partial") counts with the rounds it has.

The merged file is {"date", "command", "machine", "environment", "builds",
"pooled", "parts", "rows", "rounds", "failed_benchmarks"}: "date" the first
part's; "command" this merge's options (the files it merged are its parts);
"environment" the parts' one environment (interleave.py's: the variables
that cap either side's kernels; absent where no part recorded one);
"parts", in the order given, each part's date and the bench/interleave.py
command that measured it, less its --json (the part's own file, now merged)
and with absolute paths reduced to their last component (they name one
machine's folders, not the run): a rerun of those commands, merged in that
order, remakes the table (a merged file given as a part brings its own
parts); "rows" and "rounds" as interleave.py writes them, round i holding
every benchmark's i-th round, so that a pooled benchmark can have more
rounds than the rest. A benchmark's rounds keep every record its part has
of it: Glassbox's figure, the peer's in each layout and under torch.compile
("/compiled"), the load around each measurement, and the threads Glassbox
ran where not --threads ("threads"), so that the merged rows keep their
"busy" marks (against the lowest --busy-cpus of the parts), their
"glassbox_threads" and their torch.compile ratios. "failed_benchmarks" (where a part has any):
every part's, in order, each with "part", its index in "parts".

The parts must be one table: the same builds (Glassbox's commit, PyTorch's
version), the same machine, the same environment, and the same settings:
every option of their interleave.py commands (the defaults where left out)
but the networks, --batch, --modes, --rounds, --json, --bench, --python,
--glassbox-autotune-cache, --idle-check and --busy-cpus. Otherwise the
merge stops (exit 1) naming two files that differ and how (Note [One build
per table] in interleave.py). Parts that recorded no machine take --machine,
the machine they ran on as their run's notes name it; parts that recorded
no environment (interleave.py before it recorded one) take --environment
(NAME=VALUE,... or none), and without it stop the merge beside a part that
recorded one. A file given twice with --pool-rounds (its rounds would count
twice), an --out that is one of the files or a folder, and a file that is
not interleave.py's whole JSON (bench/results_io.py checks what is read)
stop the merge before anything is written. Standard library only.

Usage:
  python3 bench/merge_results.py [--pool-rounds] [--machine TEXT] [--environment NAME=VALUE,...|none]
      --out MERGED.json RESULT.json [RESULT.json ...]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interleave import DEFAULT_BUSY_CPUS, options, rows_from_rounds, settings, write_json  # noqa: E402
from ratio_table import load_rounds  # noqa: E402
from results_io import (BadInput, check_one_table, check_output, check_rounds, distinct_files,  # noqa: E402
                        load_json)


def part_command(command):
    """A part's interleave.py command, less its --json PATH, absolute paths reduced."""
    out, skip = [], False
    for arg in command:
        if skip:
            skip = False
        elif arg == "--json":
            skip = True
        elif not (isinstance(arg, str) and arg.startswith("--json=")):
            out.append(arg)
    return without_machine_paths(out)


def without_machine_paths(command):
    """A command's arguments with absolute paths reduced to their last component."""
    out = []
    for arg in command:
        if isinstance(arg, str) and arg.startswith("/"):
            arg = os.path.basename(arg.rstrip("/"))
        elif isinstance(arg, str) and "=/" in arg:  # --flag=/abs/path
            flag, path = arg.split("=", 1)
            arg = f"{flag}={os.path.basename(path.rstrip('/'))}"
        out.append(arg)
    return out


def parse_environment(spec):
    """--environment NAME=VALUE[,NAME=VALUE...], or "none", as interleave.py's "environment"."""
    if spec.strip() == "none":
        return {}
    pairs = [item.split("=", 1) for item in spec.split(",") if item.strip()]
    if not pairs or any(len(pair) != 2 or not pair[0].strip() for pair in pairs):
        sys.exit(f"merge_results.py: --environment takes NAME=VALUE[,NAME=VALUE...] or none, got '{spec}'")
    return {name.strip(): value for name, value in pairs}


def check_parts(path, data):
    """What the merge reads besides the rounds (results_io.check_rounds): the
    command (a list), the parts of a merged file (objects with a command),
    the failed benchmarks (objects). Returns data."""
    if not isinstance(data.get("command", []), list):
        raise BadInput(f"{path}: \"command\" is not a list of the command's arguments")
    parts = data.get("parts") or []
    if not isinstance(parts, list) or not all(isinstance(p, dict) and isinstance(p.get("command", []), list)
                                              for p in parts):
        raise BadInput(f"{path}: \"parts\" is not a list of {{\"date\", \"command\"}} objects")
    failed = data.get("failed_benchmarks") or []
    if not isinstance(failed, list) or not all(isinstance(f, dict) and isinstance(f.get("part", 0), int)
                                               for f in failed):
        raise BadInput(f"{path}: \"failed_benchmarks\" is not a list of {{\"name\", \"error_message\"}} objects")
    return data


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", metavar="RESULT.json")
    parser.add_argument("--out", required=True, metavar="MERGED.json")
    parser.add_argument("--pool-rounds", action="store_true",
                        help="a benchmark in several files takes the rounds of all of them, not of the last")
    parser.add_argument("--machine", help="the machine, for parts that did not record one")
    parser.add_argument("--environment", metavar="NAME=VALUE,...|none",
                        help="the environment (interleave.py's \"environment\"), for parts that did not record one")
    args = parser.parse_args()
    stated = parse_environment(args.environment) if args.environment is not None else None
    check_output(args.out, "--out", args.files, make_folder=True)
    if args.pool_rounds:
        distinct_files(args.files)

    # builds and machines: each one seen, with the first file that ran it (named where they differ).
    parts, builds, machines, given, checked, failed = [], {}, {}, set(), [], []
    for path in args.files:
        data = check_parts(path, check_rounds(path, load_json(path)))
        ran = data.get("builds") or {}
        builds.setdefault((ran.get("glassbox", "unrecorded"), ran.get("pytorch", "unrecorded")), path)
        machines.setdefault(data.get("machine") or args.machine or "unrecorded", path)
        if not data.get("machine") and args.machine:
            given.add("machine")
        environment = data.get("environment")
        if environment is None and stated is not None:
            environment = stated
            given.add("environment")
        # A merged file (this script's) brings its own parts, each checked as one.
        own = data.get("parts") or [{"date": data.get("date"), "command": part_command(data.get("command", [])),
                                     **({"partial": True} if data.get("partial") else {})}]
        for i, part in enumerate(own):
            where = path if len(own) == 1 else f"{path} (part {i + 1})"
            checked.append((where, settings(part.get("command")), environment))
        failed += [dict(entry, part=entry.get("part", 0) + len(parts)) for entry in data.get("failed_benchmarks") or []]
        parts += own
    if len(builds) > 1:
        sys.exit("merge_results.py: the files ran different builds, not one table: "
                 + "; ".join(f"{path}: Glassbox {g}, PyTorch {p}" for (g, p), path in sorted(builds.items())))
    if len(machines) > 1:
        sys.exit("merge_results.py: the files ran on different machines (or some recorded none; --machine "
                 "names it for those): " + "; ".join(f"{path}: {m}" for m, path in sorted(machines.items())))
    (glassbox, pytorch), = builds
    machine, = machines
    check_one_table(checked)
    environment = checked[0][2]

    rounds, nets = load_rounds(args.files, pool=args.pool_rounds)
    # A row is busy as the strictest part would mark it (each part's --busy-cpus).
    thresholds = [found["busy_cpus"] for found in (options(p.get("command")) for p in parts) if found]
    dates = [p["date"] for p in parts if p.get("date")]
    merged = {"date": min(dates) if dates else None,
              "command": ["bench/merge_results.py"] + (["--pool-rounds"] if args.pool_rounds else [])
              + ["--out", args.out],
              "machine": machine,
              **({"environment": environment} if environment is not None else {}),
              "builds": {"glassbox": glassbox, "pytorch": pytorch},
              "pooled": args.pool_rounds, "parts": parts,
              "rows": rows_from_rounds(rounds, nets, min(thresholds, default=DEFAULT_BUSY_CPUS)), "rounds": rounds,
              **({"failed_benchmarks": failed} if failed else {})}
    # Said so, since the parts themselves do not.
    if "environment" in given:
        merged["command"][1:1] = ["--environment", args.environment]
    if "machine" in given:
        merged["command"][1:1] = ["--machine", machine]
    try:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    except OSError as e:
        raise BadInput(f"--out {args.out}: cannot make its folder: {e.strerror or e}")
    write_json(args.out, merged)
    print(f"merged {len(args.files)} files ({len(merged['rows'])} benchmarks, up to {len(rounds)} rounds) "
          f"into {args.out}")


if __name__ == "__main__":
    try:
        main()
    except BadInput as e:
        sys.exit(f"merge_results.py: {e}")
