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

The merged file is {"date", "command", "machine", "builds", "pooled",
"parts", "rows", "rounds"}: "date" the first part's; "command" this merge's
options (the files it merged are its parts); "parts", in the order given,
each part's date and the bench/interleave.py command that measured it, less
its --json (the part's own file, now merged) and with absolute paths reduced
to their last component (they name one machine's folders, not the run): a
rerun of those commands, merged in that order, remakes the table; "rows"
and "rounds" as interleave.py writes them, round i holding every
benchmark's i-th round, so that a pooled benchmark can have more rounds
than the rest.

The parts must agree on the builds (Glassbox's commit, PyTorch's version) and
the machine: otherwise the merge stops (Note [One build per table] in
interleave.py). Parts that recorded no machine take --machine, the machine
they ran on as their run's notes name it.

Usage:
  python3 bench/merge_results.py [--pool-rounds] [--machine TEXT] --out MERGED.json RESULT.json [RESULT.json ...]
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interleave import rows_from_rounds, write_json  # noqa: E402  (after the path is set)
from ratio_table import load_rounds  # noqa: E402


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", metavar="RESULT.json")
    parser.add_argument("--out", required=True, metavar="MERGED.json")
    parser.add_argument("--pool-rounds", action="store_true",
                        help="a benchmark in several files takes the rounds of all of them, not of the last")
    parser.add_argument("--machine", help="the machine, for parts that did not record one")
    args = parser.parse_args()

    parts, builds, machines, given = [], set(), set(), False
    for path in args.files:
        with open(path) as f:
            data = json.load(f)
        if not isinstance(data.get("rounds"), list):
            sys.exit(f"merge_results.py: {path} is not bench/interleave.py's JSON (no \"rounds\")")
        ran = data.get("builds", {})
        builds.add((ran.get("glassbox", "unrecorded"), ran.get("pytorch", "unrecorded")))
        machines.add(data.get("machine") or args.machine or "unrecorded")
        given = given or (not data.get("machine") and bool(args.machine))
        part = {"date": data.get("date"), "command": part_command(data.get("command", []))}
        if data.get("partial"):
            part["partial"] = True
        parts.append(part)
    if len(builds) > 1:
        sys.exit("merge_results.py: the files ran different builds, not one table: "
                 + "; ".join(f"Glassbox {g}, PyTorch {p}" for g, p in sorted(builds)))
    if len(machines) > 1:
        sys.exit("merge_results.py: the files ran on different machines (or some recorded none; --machine "
                 "names it for those): " + "; ".join(sorted(machines)))
    (glassbox, pytorch), = builds
    machine, = machines

    rounds, nets = load_rounds(args.files, pool=args.pool_rounds)
    dates = [p["date"] for p in parts if p["date"]]
    merged = {"date": min(dates) if dates else None,
              "command": ["bench/merge_results.py"] + (["--pool-rounds"] if args.pool_rounds else [])
              + ["--out", args.out],
              "machine": machine, "builds": {"glassbox": glassbox, "pytorch": pytorch},
              "pooled": args.pool_rounds, "parts": parts,
              "rows": rows_from_rounds(rounds, nets), "rounds": rounds}
    if given:  # said so, since the parts themselves do not
        merged["command"][1:1] = ["--machine", machine]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    write_json(args.out, merged)
    print(f"merged {len(args.files)} files ({len(merged['rows'])} benchmarks, up to {len(rounds)} rounds) "
          f"into {args.out}")


if __name__ == "__main__":
    main()
