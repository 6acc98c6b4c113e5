#!/usr/bin/env python3
"""bench/peers/torch_gemm.py: torch.matmul timed as `bench_gemm --serve`
times Glassbox's GEMM, for bench/gemm_vs_torch.py, which keeps both running
and alternates short windows of the two.

Protocol, the same on both sides: A (m, k) and B (k, n) float32 from
U(-1, 1), C (m, n) preallocated (kept while the shape stays the same), one
untimed product when a shape is new, then products timed one by one until
they add up to at least SECONDS; GFLOP/s = 2 m n k x products / their summed
time.

    python bench/peers/torch_gemm.py --threads 2
    stdin:  "m n k seconds" per line      stdout: "GFLOP/s" per line

A line it cannot serve (not four words; m, n or k not a whole number from 1
to 2^20; seconds not a number from 1e-6 to 3600, as bench_gemm takes them;
operands the memory cannot hold) is answered with a line "error: ...", and
the next line served. A blank line is no request: it is not answered.
"""

import argparse
import math
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/, for results_io

from results_io import positive_int  # noqa: E402

OPERANDS = {}  # the last shape's (a, b, c)
MAX_SIDE = 1 << 20  # bench_gemm --serve's limits
MIN_WINDOW, MAX_WINDOW = 1e-6, 3600.0


def parse_request(line):
    """(m, n, k, seconds) from a request line, or ValueError with the answer "error: ..."."""
    text = line.rstrip("\r\n")
    words = text.split()

    def refuse(why):
        return ValueError(f"error: expected 'm n k seconds' (sides from 1 to {MAX_SIDE}, seconds up to "
                          f"{MAX_WINDOW:g}), got {text!r}: {why}")

    if len(words) != 4:
        raise refuse(f"{len(words)} word{'' if len(words) == 1 else 's'} where 4 are")
    sides = []
    for name, word in zip("mnk", words[:3]):
        if not re.fullmatch(r"-?[0-9]+", word) or not 1 <= int(word) <= MAX_SIDE:
            raise refuse(f"{name} must be an integer from 1 to {MAX_SIDE}, got {word!r}")
        sides.append(int(word))
    try:
        window = float(words[3])
    except ValueError:
        window = math.nan
    if not MIN_WINDOW <= window <= MAX_WINDOW:  # (a NaN window fails the comparison)
        raise refuse(f"seconds must be a number from {MIN_WINDOW:g} to {MAX_WINDOW:g}, got {words[3]!r}")
    return sides[0], sides[1], sides[2], window


def gflops(m, n, k, window):
    import torch
    if (m, n, k) not in OPERANDS:
        OPERANDS.clear()
        a, b, c = torch.rand(m, k) * 2 - 1, torch.rand(k, n) * 2 - 1, torch.empty(m, n)
        torch.matmul(a, b, out=c)  # untimed: first touch, thread start-up
        OPERANDS[(m, n, k)] = (a, b, c)
    a, b, c = OPERANDS[(m, n, k)]
    products, seconds = 0, 0.0
    while seconds < window or seconds <= 0.0:  # at least one product, and time to divide by
        start = time.perf_counter()
        torch.matmul(a, b, out=c)
        seconds += time.perf_counter() - start
        products += 1
    return 2.0 * m * n * k * products / seconds / 1e9


def answer(line):
    """The answer line to one request line: the rate, or "error: ..."; None for a blank line."""
    if not line.split():
        return None
    try:
        m, n, k, window = parse_request(line)
    except ValueError as e:
        return str(e)
    try:
        return f"{gflops(m, n, k, window):.3f}"
    except (RuntimeError, MemoryError) as e:  # answered as bench_gemm answers it, and the next line served
        OPERANDS.clear()
        if isinstance(e, MemoryError) or "can't allocate memory" in str(e):
            return f"error: out of host memory for the operands of {m} x {n} x {k}"
        lines = [text.strip() for text in str(e).splitlines() if text.strip()]
        return f"error: {m} x {n} x {k}: {lines[0] if lines else type(e).__name__}"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="torch_gemm.py", description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=positive_int, required=True)
    args = parser.parse_args(argv)
    import torch
    torch.set_num_threads(args.threads)
    print(f"ready: torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"BLAS {'MKL' if torch.backends.mkl.is_available() else 'not MKL'}", flush=True)
    for line in sys.stdin:
        reply = answer(line)
        if reply is not None:
            print(reply, flush=True)


if __name__ == "__main__":
    main()
