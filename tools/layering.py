#!/usr/bin/env python3
"""tools/layering.py: the include graph between the top-level folders has no
upward edge.

The folders form layers, lowest first:

    tensor  <  layers  <  graph  <  optim, data, nets  <  train  <  tools  <  bench  <  tests

A file includes headers of its own folder and of lower layers only; folders
of the same layer (optim, data, nets) do not include each other. A layer's
subfolders (layers/conv2d/) belong to it. Includes of anything else (system
and third-party headers, generated headers) are not edges.

    python3 tools/layering.py            # the repository's tracked files
    python3 tools/layering.py --root DIR # every file under DIR (for a test)

Prints each upward edge as FILE:LINE: FROM includes TO, and exits 1 if there
is any.
"""
import argparse
import os
import re
import subprocess
import sys

LAYERS = [["tensor"], ["layers"], ["graph"], ["optim", "data", "nets"], ["train"], ["tools"], ["bench"], ["tests"]]
RANK = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z_]+)/')
SOURCES = re.compile(r"\.(h|hpp|cpp|cc|cu|cuh)$")


def files_under(root, tracked):
    if tracked:
        names = subprocess.run(["git", "-C", root, "ls-files"], check=True, capture_output=True, text=True).stdout
        return [n for n in names.split("\n") if n]
    out = []
    for base, _, names in os.walk(root):
        for name in names:
            out.append(os.path.relpath(os.path.join(base, name), root))
    return out


def upward_edges(root, names):
    edges = []
    for name in sorted(names):
        top = name.split("/", 1)[0]
        if top not in RANK or not SOURCES.search(name):
            continue
        with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                match = INCLUDE.match(line)
                if not match or match.group(1) not in RANK:
                    continue
                target = match.group(1)
                if target != top and RANK[target] >= RANK[top]:
                    edges.append(f"{name}:{number}: {top} includes {target} ({line.strip()})")
    return edges


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", help="check every file under this folder instead of the repository's tracked files")
    args = parser.parse_args()
    root = args.root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    edges = upward_edges(root, files_under(root, tracked=args.root is None))
    for edge in edges:
        print(edge)
    order = "  <  ".join(", ".join(folders) for folders in LAYERS)
    if edges:
        print(f"layering: {len(edges)} upward include(s); the layers, lowest first: {order}")
        return 1
    print(f"layering: no upward include; the layers, lowest first: {order}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
