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

NET is one of peer_models.py's networks (any case). The flags and programs
are checked before anything runs (a bad one: exit status 2); a child that
fails has its own error line passed through, and its exit status is this
script's.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))  # bench/, for results_io

from peer_models import NET_NAMES, find_net  # noqa: E402
from peer_protocol import MODES  # noqa: E402
from results_io import BadInput, check_programs, positive_int  # noqa: E402

PROG = "memory_side_by_side.py"
MIB = 2.0 ** 20


class ChildFailed(Exception):
    """A child program failed: its own error line, and the exit status to leave with."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def error_line(output, program, status):
    """The last line a failed child printed (its error), or a line saying it printed none."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else f"{program} exited with status {status} and printed nothing"


def max_rss_of(command, env=None):
    """Runs `command`; returns (exit status, its max RSS in bytes, stdout)."""
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    with child.stdout:
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
            raise ChildFailed(error_line(output, bench, status), status if status > 0 else 1)
        with open(out) as f:
            runs = [b for b in json.load(f)["benchmarks"] if b["name"].startswith(name)]
    if not runs:
        raise ChildFailed(f"{PROG}: {bench} ran no benchmark {name}", 1)
    if runs[0].get("error_occurred") or "peak_memory" not in runs[0]:
        raise ChildFailed(f"{PROG}: {bench} {name}: {runs[0].get('error_message', 'no peak_memory counter')}", 1)
    return runs[0]["peak_memory"], rss - baseline


def pytorch(python, nets, modes, batch, threads):
    """{benchmark name: peak bytes}; a failed measurement is ChildFailed with peak_memory.py's own error."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "p.json")
        command = [python, os.path.join(HERE, "peak_memory.py"), "--device", "cpu", "--batch", str(batch),
                   "--modes", ",".join(modes), "--threads", str(threads), "--json", out] + nets
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              errors="replace")
        results = []
        if os.path.isfile(out):
            with open(out) as f:
                results = json.load(f)["benchmarks"]
        # A measurement that failed (exit status 1) is in its row; any other failure on stderr.
        for row in results:
            if row.get("error_occurred"):
                raise ChildFailed(f"peak_memory.py: {row['name']}: {row['error_message']}",
                                  done.returncode if done.returncode > 0 else 1)
        if done.returncode != 0:
            raise ChildFailed(error_line(done.stderr, "peak_memory.py", done.returncode),
                              done.returncode if done.returncode > 0 else 1)
        return {b["name"]: b["peak_memory"] for b in results}


def parse_args(argv=None):
    """The flags, nets and modes, and the two programs, checked before anything runs."""
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--bench", default="build/bench_nets")
    parser.add_argument("--python", default=os.environ.get("GLASSBOX_PYTHON") or "python3",
                        help="the Python with PyTorch (default: $GLASSBOX_PYTHON, else python3)")
    parser.add_argument("--batch", type=positive_int, default=2)
    parser.add_argument("--modes", default="forward_backward,inference")
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("nets", nargs="+", help="networks: " + ", ".join(NET_NAMES))
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",")]
    if not all(m in MODES for m in modes):
        parser.error(f"--modes {args.modes!r}: expected modes separated by commas, each one of {', '.join(MODES)}")
    args.modes = list(dict.fromkeys(modes))
    unknown = [n for n in args.nets if find_net(n) is None]
    if unknown:
        parser.error(f"unknown net {unknown[0]!r} (known: {', '.join(NET_NAMES)})")
    # bench_nets matches names as spelled: each net in peer_models' spelling, once.
    args.nets = list(dict.fromkeys(find_net(n).name for n in args.nets))
    try:
        check_programs([("--bench", args.bench), ("--python", args.python)])
    except BadInput as e:
        parser.error(str(e))
    return args


def main(argv=None):
    args = parse_args(argv)
    modes = args.modes
    try:
        status, baseline, output = max_rss_of([args.bench, "--device=cpu", "--benchmark_list_tests"])
        if status != 0:
            raise ChildFailed(error_line(output, args.bench, status), status if status > 0 else 1)
        torch_peaks = pytorch(args.python, args.nets, modes, args.batch, args.threads)
        for net in args.nets:
            for mode in modes:
                if f"{net}/{mode}/batch:{args.batch}" not in torch_peaks:
                    raise ChildFailed(f"{PROG}: peak_memory.py reported no {net}/{mode}/batch:{args.batch}", 1)

        print(f"CPU, batch {args.batch}, {args.threads} threads; MiB = 2^20 bytes; "
              f"bench_nets baseline RSS {baseline / MIB:.1f} MiB")
        header = (f"{'benchmark':40s} {'Glassbox allocator':>19s} {'Glassbox RSS':>13s} {'PyTorch RSS':>12s} "
                  f"{'ratio':>6s}")
        print(header)
        print("-" * len(header))
        for net in args.nets:
            for mode in modes:
                name = f"{net}/{mode}/batch:{args.batch}"
                allocator, rss = glassbox(args.bench, net, mode, args.batch, args.threads, baseline)
                theirs = torch_peaks[name]
                ratio = f"{rss / theirs:.2f}" if theirs > 0 else "-"
                theirs_text = f"{theirs / MIB:.1f}" if theirs > 0 else "-"
                print(f"{name:40s} {allocator / MIB:19.1f} {rss / MIB:13.1f} {theirs_text:>12s} {ratio:>6s}",
                      flush=True)
    except ChildFailed as e:
        print(e, file=sys.stderr)
        return e.status
    except OSError as e:  # a program that would not start after all
        print(f"{PROG}: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 1
    print("ratio: Glassbox RSS / PyTorch RSS (below 1: Glassbox needs less)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
