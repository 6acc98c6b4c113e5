#!/usr/bin/env python3
"""bench/peers/memory_side_by_side.py: Glassbox's peak memory beside PyTorch's,
same networks, batch and modes, on the CPU, measured the same way.

For each (network, mode):
  Glassbox  build/bench_nets runs that one benchmark in a child process
            (--benchmark_filter=^NET/MODE/batch:N, any time suffix). Two figures:
            allocator  bench_nets' peak_memory counter: the bytes Glassbox's
                       allocator held at its peak over the timed steps
            RSS        the child's max RSS (wait4) minus the max RSS of
                       `bench_nets --benchmark_list_tests` (the program
                       loaded, its benchmarks registered, no network built)
  PyTorch   bench/peers/peak_memory.py (max RSS minus the RSS before the
            model was built, one child per measurement)
The RSS columns are the comparable pair: both count what the process made
resident, allocator caches and libraries' buffers included.

Usage:
  python3 bench/peers/memory_side_by_side.py [--bench build/bench_nets]
      [--python PYTHON] [--batch N]
      [--modes forward_backward,inference] [--threads N] NET ...
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 2.0 ** 20


def max_rss_of(command, env=None):
    """Runs `command`; returns (exit status, its max RSS in bytes, stdout)."""
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    output = child.stdout.read().decode(errors="replace")
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode, usage.ru_maxrss * 1024, output  # ru_maxrss is in KiB on Linux


def glassbox(bench, net, mode, batch, threads, baseline):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        name = f"{net}/{mode}/batch:{batch}"
        status, rss, output = max_rss_of(
            [bench, "--device=cpu", f"--batch={batch}", f"--benchmark_filter=^{name}(/real_time|/manual_time)?$",
             "--benchmark_min_time=0.01", f"--benchmark_out={out}"], env)
        if status != 0:
            raise RuntimeError(f"bench_nets {name} failed ({status}):\n{output}")
        with open(out) as f:
            runs = [b for b in json.load(f)["benchmarks"] if b["name"].startswith(name)]
    return runs[0]["peak_memory"], rss - baseline


def pytorch(python, nets, modes, batch, threads):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "p.json")
        command = [python, os.path.join(HERE, "peak_memory.py"), "--device", "cpu", "--batch", str(batch),
                   "--modes", ",".join(modes), "--threads", str(threads), "--json", out] + nets
        status = subprocess.call(command, stdout=subprocess.DEVNULL)
        if status != 0:
            raise RuntimeError(f"peak_memory.py failed ({status}): {' '.join(command)}")
        with open(out) as f:
            return {b["name"]: b["peak_memory"] for b in json.load(f)["benchmarks"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", default="build/bench_nets")
    parser.add_argument("--python", default=os.environ.get("GLASSBOX_PYTHON") or "python3",
                        help="the Python with PyTorch (default: $GLASSBOX_PYTHON, else python3)")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--modes", default="forward_backward,inference")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("nets", nargs="+")
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]

    status, baseline, output = max_rss_of([args.bench, "--device=cpu", "--benchmark_list_tests"])
    if status != 0:
        sys.exit(f"memory_side_by_side.py: {args.bench} --benchmark_list_tests failed:\n{output}")
    torch_peaks = pytorch(args.python, args.nets, modes, args.batch, args.threads)

    print(f"CPU, batch {args.batch}, {args.threads} threads; MiB = 2^20 bytes; "
          f"bench_nets baseline RSS {baseline / MIB:.1f} MiB")
    header = f"{'benchmark':40s} {'Glassbox allocator':>19s} {'Glassbox RSS':>13s} {'PyTorch RSS':>12s} {'ratio':>6s}"
    print(header)
    print("-" * len(header))
    for net in args.nets:
        for mode in modes:
            name = f"{net}/{mode}/batch:{args.batch}"
            allocator, rss = glassbox(args.bench, net, mode, args.batch, args.threads, baseline)
            theirs = torch_peaks.get(name)
            ratio = f"{rss / theirs:.2f}" if theirs else "-"
            theirs_text = f"{theirs / MIB:.1f}" if theirs else "-"
            print(f"{name:40s} {allocator / MIB:19.1f} {rss / MIB:13.1f} {theirs_text:>12s} {ratio:>6s}")
    print("ratio: Glassbox RSS / PyTorch RSS (below 1: Glassbox needs less)")


if __name__ == "__main__":
    main()
