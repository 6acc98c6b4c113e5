#!/usr/bin/env python3
"""tools/product_checks.py: the tree reads as a product, not a lab notebook.

Fails (exit 1), naming each file and line, on:
  - a development-round reference (the word "stop" and a number, as ROUND
    below matches it) in a tracked file:
    history lives in git, not in the tree;
  - an absolute path of a particular machine (under the home or work
    folders MACHINE_PATH below names) in a tracked file: scripts find their tools through
    options, environment variables and PATH;
  - a file under bench/results/ outside the per-machine layout: each
    machine is a folder bench/results/NAME/ holding its context (README.md),
    its latest whole table (table.json) with the table made from it
    (table.md), and other whole-run files; no dated or numbered names
    (a rerun replaces a file, git keeps the old one); bench/results/README.md
    indexes the folders, and every folder has a row there.

    python3 tools/product_checks.py            # the repository's tracked files
    python3 tools/product_checks.py --root DIR # every file under DIR (for a test)
"""
import argparse
import os
import re
import subprocess
import sys

ROUND = re.compile(r"\b[Ss]top ?[0-9]+")
MACHINE_PATH = re.compile(r"(?<![\w.])/(work|root)/|(?<![\w.])/home/[a-z_][\w-]*/")
# Names that say when or in which round a file was made, rather than what it is.
DATED = re.compile(r"(19|20)[0-9]{2}-[01][0-9]-[0-3][0-9]|-part[0-9]|[0-9]+rounds?\b|-stop[0-9]")
CONTEXT_FILE = "README.md"
TEXT = re.compile(r"\.(c|cc|cpp|cu|cuh|h|hpp|py|sh|md|txt|cmake|json|jsonl|html|in|yml|yaml|supp)$|"
                  r"(^|/)(CMakeLists\.txt|Makefile|run)$")
# This file's patterns name what they look for.
SELF = ("tools/product_checks.py",)


def tracked_files(root):
    listed = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True)
    if listed.returncode != 0:  # not a git checkout (an unpacked archive): every file but the builds
        return all_files(root)
    names = listed.stdout
    return [n for n in names.split("\n") if n and os.path.isfile(os.path.join(root, n))]


def all_files(root):
    out = []
    for base, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git" and not d.startswith("build")]
        out += [os.path.relpath(os.path.join(base, n), root) for n in names]
    return out


def text_problems(root, names):
    problems = []
    for name in sorted(names):
        if name in SELF or not TEXT.search(name):
            continue
        with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                if ROUND.search(line):
                    problems.append(f"{name}:{number}: a development-round reference: {line.strip()[:120]}")
                if MACHINE_PATH.search(line):
                    problems.append(f"{name}:{number}: an absolute path of a particular machine: {line.strip()[:120]}")
    return problems


def results_problems(root, names):
    problems = []
    results = [n for n in names if n.startswith("bench/results/")]
    machines = {}
    for name in sorted(results):
        parts = name.split("/")[2:]
        if parts == ["README.md"]:
            continue
        if len(parts) != 2:
            problems.append(f"{name}: bench/results holds README.md and one folder per machine, nothing else")
            continue
        machine, file = parts
        machines.setdefault(machine, set()).add(file)
        if DATED.search(file):
            problems.append(f"{name}: a results file is named for what it holds, not when or in which round "
                            f"it ran (a rerun replaces it)")
    index_path = os.path.join(root, "bench/results/README.md")
    index = open(index_path, encoding="utf-8").read() if os.path.exists(index_path) else None
    if results and index is None:
        problems.append("bench/results/README.md: missing: it indexes the machines' folders")
    for machine, files in sorted(machines.items()):
        if CONTEXT_FILE not in files:
            problems.append(f"bench/results/{machine}/: no README.md (the machine, its libraries, the commands)")
        for table in sorted(f for f in files if f.startswith("table") and f.endswith(".json")):
            if table[:-len(".json")] + ".md" not in files:
                problems.append(f"bench/results/{machine}/{table}: no {table[:-len('.json')]}.md made from it "
                                f"(bench/ratio_table.py --out)")
        if index is not None and f"{machine}/" not in index:
            problems.append(f"bench/results/README.md: no row for {machine}/")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", help="check every file under this folder instead of the repository's tracked files")
    args = parser.parse_args()
    root = args.root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    names = all_files(root) if args.root else tracked_files(root)
    problems = text_problems(root, names) + results_problems(root, names)
    for problem in problems:
        print(problem)
    print(f"product checks: {len(problems)} problem(s) in {len(names)} files")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
