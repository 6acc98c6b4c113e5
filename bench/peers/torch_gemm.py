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
"""

import argparse
import sys
import time

import torch


OPERANDS = {}  # the last shape's (a, b, c)


def gflops(m, n, k, window):
    if (m, n, k) not in OPERANDS:
        OPERANDS.clear()
        a, b, c = torch.rand(m, k) * 2 - 1, torch.rand(k, n) * 2 - 1, torch.empty(m, n)
        torch.matmul(a, b, out=c)  # untimed: first touch, thread start-up
        OPERANDS[(m, n, k)] = (a, b, c)
    a, b, c = OPERANDS[(m, n, k)]
    products, seconds = 0, 0.0
    while seconds < window:
        start = time.perf_counter()
        torch.matmul(a, b, out=c)
        seconds += time.perf_counter() - start
        products += 1
    return 2.0 * m * n * k * products / seconds / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"ready: torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"BLAS {'MKL' if torch.backends.mkl.is_available() else 'not MKL'}", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            m, n, k, window = int(words[0]), int(words[1]), int(words[2]), float(words[3])
        except (IndexError, ValueError):
            print(f"error: expected 'm n k seconds', got {line.strip()!r}", flush=True)
            continue
        print(f"{gflops(m, n, k, window):.3f}", flush=True)


if __name__ == "__main__":
    main()
