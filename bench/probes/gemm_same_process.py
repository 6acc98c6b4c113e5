#!/usr/bin/env python3
"""bench/probes/gemm_same_process.py: torch.matmul (PyTorch's, on MKL),
Debian's OpenBLAS (OpenMP build) and oneDNN's dnnl_sgemm (Debian's libdnnl 2.6)
in one process, the three taking turns run by run (each run: products
repeated for at least 0.2 s), so that all three see the same machine from
second to second. Prints each library's median GFLOP/s and, in brackets, the
median of its per-run ratios to torch.matmul. It chose the rule of Note
[Eigen's GEMM on oneDNN's sgemm] (tensor/gemm_onednn.cpp). Not part of the
build; the libraries are opened with ctypes (RTLD_LOCAL: both define cblas
symbols), and all three share PyTorch's libgomp.

    python3 bench/probes/gemm_same_process.py THREADS RUNS SHAPE...

SHAPE is m,n,k[,ta,tb]: row-major C (m, n) = op(A) op(B), op a transpose
where ta or tb is "t" (A B^T: m,n,k,n,t). For instance the 2048^3 yardstick
and ResNet-50's layer4 1x1 backward-data (A^T B, 49 columns):

    OMP_NUM_THREADS=2 python3 bench/probes/gemm_same_process.py 2 9 2048,2048,2048 2048,49,512,t,n
"""

import ctypes
import statistics
import sys
import time

import torch

OPENBLAS = "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0"
CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_TRANS = 101, 111, 112


def parse(spec):
    parts = spec.split(",")
    m, n, k = (int(p) for p in parts[:3])
    ta, tb = (parts[3] == "t", parts[4] == "t") if len(parts) == 5 else (False, False)
    return m, n, k, ta, tb


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    threads, runs = int(sys.argv[1]), int(sys.argv[2])
    torch.set_num_threads(threads)
    openblas = ctypes.CDLL(OPENBLAS, mode=ctypes.RTLD_LOCAL)
    onednn = ctypes.CDLL("libdnnl.so.2", mode=ctypes.RTLD_LOCAL)
    openblas.openblas_set_num_threads(threads)
    f, i64, ch = ctypes.c_float, ctypes.c_int64, ctypes.c_char
    print(f"{threads} threads, torch {torch.__version__}; median GFLOP/s (median ratio to torch.matmul)")
    for spec in sys.argv[3:]:
        m, n, k, ta, tb = parse(spec)
        a = torch.rand(k, m).t() if ta else torch.rand(m, k)  # (m, k) as the product reads it
        b = torch.rand(n, k).t() if tb else torch.rand(k, n)  # (k, n)
        c = torch.empty(m, n)
        pa, pb, pc = (ctypes.c_void_p(t.data_ptr()) for t in (a, b, c))
        lda, ldb = (m if ta else k), (k if tb else n)
        kernels = {
            "torch": lambda: torch.matmul(a, b, out=c),
            "openblas": lambda: openblas.cblas_sgemm(
                CBLAS_ROW_MAJOR, CBLAS_TRANS if ta else CBLAS_NO_TRANS, CBLAS_TRANS if tb else CBLAS_NO_TRANS,
                m, n, k, f(1), pa, lda, pb, ldb, f(0), pc, n),
            "onednn": lambda: onednn.dnnl_sgemm(
                ch(b"T" if ta else b"N"), ch(b"T" if tb else b"N"), i64(m), i64(n), i64(k), f(1), pa, i64(lda),
                pb, i64(ldb), f(0), pc, i64(n)),
        }
        expected = torch.matmul(a, b)
        for name, product in kernels.items():  # each library's answer checked once
            product()
            if not torch.allclose(c, expected, rtol=1e-3, atol=1e-3):
                sys.exit(f"{name} got {spec} wrong")
        rates = {name: [] for name in kernels}
        for _ in range(runs):
            for name, product in kernels.items():
                count, start = 0, time.perf_counter()
                while True:
                    product()
                    count += 1
                    seconds = time.perf_counter() - start
                    if seconds >= 0.2:
                        break
                rates[name].append(2 * m * n * k * count / seconds / 1e9)
        cells = []
        for name, values in rates.items():
            ratio = statistics.median(v / t for v, t in zip(values, rates["torch"]))
            cells.append(f"{name} {statistics.median(values):6.1f} ({ratio:.2f})")
        print(f"{spec:22s} " + "  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
