#!/usr/bin/env python3
"""bench/probes/torch_matmul.py: torch.matmul on the shapes of
bench/probes/gemm_threaded.cpp, timed the same way (best of 5 runs of at
least 0.5 s), so the three GEMMs can be put side by side.

    python3 bench/probes/torch_matmul.py [threads]   (default 2)
"""

import sys
import time

import torch

SHAPES = [(2048, 2048, 2048), (700, 2600, 650), (700, 10000, 650), (700, 650, 10000), (20, 2600, 650),
          # convolutions, one image's im2col (gemm_threaded.cpp names each)
          (64, 12544, 147), (64, 3136, 576), (128, 784, 1152), (256, 196, 2304), (512, 49, 4608),
          (256, 3136, 64), (64, 50176, 576), (256, 3136, 2304), (512, 196, 4608),
          # FCN-5's products at batch 256, LSTMLarge's decoder at batch 80, AlexNet's fc6 at 64
          # (bench/probes/gemm_onednn.cpp: m x n x k here is its m x k x n)
          (256, 4096, 784), (256, 2048, 4096), (256, 1024, 2048), (2800, 10000, 1500), (64, 4096, 9216)]


def main():
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
    print(f"{torch.get_num_threads()} threads, torch {torch.__version__}; GFLOP/s, best of 5")
    for m, n, k in SHAPES:
        a, b = torch.rand(m, k), torch.rand(k, n)
        torch.matmul(a, b)
        best = 0.0
        for _ in range(5):
            repeats, start = 0, time.perf_counter()
            while True:
                torch.matmul(a, b)
                repeats += 1
                seconds = time.perf_counter() - start
                if seconds >= 0.5:
                    break
            best = max(best, 2 * m * n * k * repeats / seconds / 1e9)
        print(f"{m:5d} x {n:5d} x {k:5d}  torch.matmul {best:6.1f}")


if __name__ == "__main__":
    main()
