#!/usr/bin/env python3
"""bench/thread_scaling.py: what more threads are worth to each side, from
bench/interleave.py's --json files of the same benchmarks at different
--threads: each side's images/s (a language model's: tokens/s) at the
first file's thread count and at each other file's, and their ratio (above
1: the extra threads help). PyTorch's figure is the better of its layouts in
each file. Run beside other work (a busy loop, `( while :; do :; done ) &`),
it shows what a shared machine does to each side's threads (Note [Threads
on a shared machine] in tensor/machine_load.h).

Usage:
  python3 bench/thread_scaling.py FEWER.json MORE.json [MORE.json...] [--out FILE.md]

Each MORE file gets a table of its own, headed by its command's --threads
and whether Glassbox's threads were fixed (--glassbox-fixed-threads) or
fitted to the free cores (bench_nets' default). Exit status 2 on a file
that cannot be read or holds no rows.
"""

import argparse
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
        rows = {row["name"]: row for row in data["rows"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"thread_scaling.py: {path}: not an interleave.py --json file with rows ({e})")
    if not rows:
        raise SystemExit(f"thread_scaling.py: {path}: no rows")
    return data, rows


def option(command, name, default=None):
    """The value after `name` in a recorded command line."""
    return command[command.index(name) + 1] if name in command[:-1] else default


def threads_of(data):
    return int(option(data.get("command", []), "--threads", "2"))


def cell(value):
    return f"{value:.1f}" if value is not None else "-"


def ratio(more, fewer):
    return f"{more / fewer:.2f}" if more and fewer else "-"


def table(fewer_data, fewer, more_data, more):
    n, m = threads_of(fewer_data), threads_of(more_data)
    fixed = "--glassbox-fixed-threads" in more_data.get("command", [])
    how = "fixed (--fixed-threads)" if fixed else "fitted to the free cores (bench_nets' default)"
    lines = [f"### {m} threads against {n}; Glassbox's {m} {how}", "",
             f"| benchmark | Glassbox {n} | Glassbox {m} | {m}/{n} | PyTorch {n} | PyTorch {m} | {m}/{n} "
             f"| other work (CPUs) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, row in more.items():
        base = fewer.get(name)
        if base is None:
            continue
        g1, g2 = base.get("glassbox_images_per_s"), row.get("glassbox_images_per_s")
        p1, p2 = base.get("pytorch_images_per_s"), row.get("pytorch_images_per_s")
        busiest = max(base.get("busiest_cpus", 0.0), row.get("busiest_cpus", 0.0))
        lines.append(f"| {name} | {cell(g1)} | {cell(g2)} | {ratio(g2, g1)} | {cell(p1)} | {cell(p2)} "
                     f"| {ratio(p2, p1)} | {busiest:.2f} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fewer")
    parser.add_argument("more", nargs="+")
    parser.add_argument("--out", metavar="FILE.md")
    args = parser.parse_args()
    fewer_data, fewer = load(args.fewer)
    parts = []
    for path in args.more:
        more_data, more = load(path)
        parts.append(table(fewer_data, fewer, more_data, more))
    builds = fewer_data.get("builds", {})
    head = (f"Glassbox {builds.get('glassbox', '-')}, PyTorch {builds.get('pytorch', '-')}, "
            f"on {fewer_data.get('machine', '-')}; images/s (a language model's: tokens/s), "
            "PyTorch in its better layout; above 1.0 the extra threads help.\n\n")
    text = head + "\n".join(parts)
    sys.stdout.write(text)
    if args.out:  # whole or not at all
        command = " ".join(["python3", "bench/thread_scaling.py", "--out", args.out, args.fewer, *args.more])
        text = f"<!-- Made by `{command}`; run it again to remake this file. -->\n\n" + text
        partial = args.out + ".partial"
        with open(partial, "w") as f:
            f.write(text)
        os.replace(partial, args.out)


if __name__ == "__main__":
    try:
        main()
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            sys.exit(2)
        raise
