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
(interleave.py's default, 2, where it gave none; a bench/merge_results.py
file's from its parts) and whether Glassbox's threads were fixed
(--glassbox-fixed-threads) or fitted to the free cores (bench_nets'
default); a benchmark in only one of the two files is named under it.
Exit status 2 on a file that cannot be read, holds no rows, or records no
interleave.py command to read its thread count from, and on an --out that
is one of the inputs or a folder, or lies in a folder that does not exist.
Standard library only.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_io import BadInput, check_output, check_rows, load_json, write_text  # noqa: E402

DEFAULT_THREADS = 2  # bench/interleave.py's --threads


def load(path):
    data = load_json(path)
    if not isinstance(data, dict) or "rows" not in data:
        raise BadInput(f"{path}: not an interleave.py --json file with rows")
    rows = {row["name"]: row for row in check_rows(path, data["rows"])}
    if not rows:
        raise BadInput(f"{path}: no rows")
    return data, rows


def option(command, name, default=None):
    """The value of `name` in a recorded command line, given as `name VALUE` or
    `name=VALUE` (the last one given counts, as argparse reads it)."""
    found = default
    for i, arg in enumerate(command):
        if arg == name and i + 1 < len(command):
            found = command[i + 1]
        elif isinstance(arg, str) and arg.startswith(name + "="):
            found = arg[len(name) + 1:]
    return found


def commands(path, data):
    """The bench/interleave.py commands that measured a file: its own, or a
    merged file's parts'."""
    parts = data.get("parts") or [{"command": data.get("command")}]
    found = [part.get("command") if isinstance(part, dict) else None for part in parts]
    for command in found:
        if not isinstance(command, list) or not command or os.path.basename(str(command[0])) != "interleave.py":
            raise BadInput(f"{path}: records no bench/interleave.py command to read its --threads from")
    return found


def threads_of(path, data):
    counts = set()
    for command in commands(path, data):
        value = option(command, "--threads", str(DEFAULT_THREADS))
        try:
            counts.add(int(value))
        except ValueError:
            raise BadInput(f"{path}: its command's --threads {value!r} is not a whole number")
    if len(counts) != 1:
        raise BadInput(f"{path}: its parts ran different --threads ({', '.join(map(str, sorted(counts)))})")
    return counts.pop()


def fixed_threads(path, data):
    return any("--glassbox-fixed-threads" in command for command in commands(path, data))


def cell(value):
    return f"{value:.1f}" if value is not None else "-"


def ratio(more, fewer):
    return f"{more / fewer:.2f}" if more and fewer else "-"


def busiest(*rows):
    """The most CPUs of other work either file saw around the benchmark ("-": neither watched)."""
    loads = [row["busiest_cpus"] for row in rows if row.get("busiest_cpus") is not None]
    return f"{max(loads):.2f}" if loads else "-"


def table(fewer_path, fewer_data, fewer, more_path, more_data, more):
    n, m = threads_of(fewer_path, fewer_data), threads_of(more_path, more_data)
    fixed = fixed_threads(more_path, more_data)
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
        lines.append(f"| {name} | {cell(g1)} | {cell(g2)} | {ratio(g2, g1)} | {cell(p1)} | {cell(p2)} "
                     f"| {ratio(p2, p1)} | {busiest(base, row)} |")
    # A benchmark measured at one thread count only has nothing to divide by: named, not dropped.
    alone = [f"{name} (only in {os.path.basename(path)})" for path, names in ((fewer_path, fewer), (more_path, more))
             for name in names if name not in (more if names is fewer else fewer)]
    if alone:
        lines += ["", "Not in both files, so no row: " + "; ".join(alone)]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fewer")
    parser.add_argument("more", nargs="+")
    parser.add_argument("--out", metavar="FILE.md")
    args = parser.parse_args()
    if args.out:
        check_output(args.out, "--out", [args.fewer, *args.more])
    fewer_data, fewer = load(args.fewer)
    parts = []
    for path in args.more:
        more_data, more = load(path)
        parts.append(table(args.fewer, fewer_data, fewer, path, more_data, more))
    builds = fewer_data.get("builds") if isinstance(fewer_data.get("builds"), dict) else {}
    head = (f"Glassbox {builds.get('glassbox', '-')}, PyTorch {builds.get('pytorch', '-')}, "
            f"on {fewer_data.get('machine', '-')}; images/s (a language model's: tokens/s), "
            "PyTorch in its better layout; above 1.0 the extra threads help.\n\n")
    text = head + "\n".join(parts)
    sys.stdout.write(text)
    if args.out:  # whole or not at all
        command = " ".join(["python3", "bench/thread_scaling.py", "--out", args.out, args.fewer, *args.more])
        write_text(args.out, f"<!-- Made by `{command}`; run it again to remake this file. -->\n\n" + text)


if __name__ == "__main__":
    try:
        main()
    except BadInput as e:
        print(f"thread_scaling.py: {e}", file=sys.stderr)
        sys.exit(2)
