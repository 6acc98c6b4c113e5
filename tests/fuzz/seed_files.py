"""tests/fuzz/seed_files.py: what every make_*_seeds.py generator does with its
seeds: replace a target's seed folder under tests/fuzz/corpus/ with them, one
file per seed, and say what it wrote. Python 3 alone."""

import os
import shutil


def write_seeds(out, seeds):
    """Makes `out` anew holding seeds = {name: bytes}, one file each."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for name, contents in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(contents)


def report(out):
    """Prints how many seeds `out` holds and the largest's size."""
    largest = max(os.path.getsize(os.path.join(out, name)) for name in os.listdir(out))
    print(f"{len(os.listdir(out))} seeds in {os.path.relpath(out)}, the largest {largest} bytes")
