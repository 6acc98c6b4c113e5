#!/usr/bin/env python3
"""bench/peers/pytorch_nets.py: the PyTorch (eager) peer of build/bench_nets.

Times the networks bench_nets times (peer_models.py: LeNet, AlexNet,
VGG11/13/16/19, Overfeat, GoogLeNet, InceptionV3, ResNet18/34/50/101/152,
ResNet56, Xception, FCN5) with the same protocol, names and counters
(DESIGN.md section 5), so bench/compare.py can put the two side by side:

  names     <Net>/<mode>/batch:<N>[/tf32|/bf16|/fp16][/channels_last][/compiled];
            modes forward (training-mode forward + loss), forward_backward
            (+ backward, no update), train_step (zero grads + forward +
            backward + SGD lr 1e-4, momentum 0.9, weight decay 5e-4:
            Glassbox's settings, bench/support/net_session.h,
            Note [The benchmarks' learning rate]), inference (eval(), under
            torch.inference_mode(), forward and loss, no autograd); peer_protocol.py
  layouts   nchw (default) and/or channels_last (model and input in
            torch.channels_last; its names end in /channels_last): Glassbox is
            compared with the better of the two (compare.py)
  inputs    U(-1, 1) from a fixed seed, labels n % classes
  precision fp32 (TF32 off, the default); tf32 (TF32 in cuDNN and matrix
            products); bf16 or fp16: automatic mixed precision, forward and
            loss under torch.autocast, fp32 parameters (master weights), TF32
            on for the fp32 work left on a GPU, and for fp16 a
            torch.amp.GradScaler (its defaults) scaling the loss of the
            backward; peer_protocol.py. A device and precision this PyTorch
            cannot run is an error, never a run in another precision
  compiled  --compile adds, after each eager run, the same model under
            torch.compile (default mode), named with /compiled at the end:
            a second reference, which bench/compare.py sets beside the same
            Glassbox row
  protocol  set-up untimed, 10 warm-up steps of the same mode, then timed steps
            (CUDA events around each step on the GPU, wall clock on the CPU)
            until --min-time seconds are measured (at least 3 steps); the mean
  counters  images/s = batch / mean step s
            TFLOP/s  = k * 2 * MACs * batch / mean step s / 1e12, k = 1 for
                       forward and inference, 3 for forward_backward and
                       train_step; MACs are those of convolutions and linear
                       layers, counted with forward hooks (on the meta device,
                       so counting is free)
            peak_memory = torch.cuda.max_memory_allocated over the timed steps
                       (reset after warm-up); 0 on the CPU (not measured here:
                       bench/peers/peak_memory.py measures it in a fresh process)

Every selected network is built on the meta device at start-up (--list too)
and its parameter count checked against REFERENCE.md: a definition that
disagrees is an error and nothing is timed. Default batches per device are
peer_models.py's NETS table (Glassbox's NetSpec defaults); --batch overrides.

Usage:
  python3 bench/peers/pytorch_nets.py [--device cpu|cuda] [--filter REGEX]
      [--batch N] [--precision fp32|tf32|bf16|fp16] [--compile] [--min-time S]
      [--threads N] [--channels-last | --layouts L,L]
      [--json PATH] [--list] [NET ...]

The JSON (--json) has Google Benchmark's shape ({"context", "benchmarks"}).
Errors are one line on stderr, exit status 2; a benchmark that fails at run
time (out of memory) is reported with error_occurred and the exit status is 1.
"""

import argparse
import gc
import math
import re
import sys

from peer_models import NET_NAMES, NETS, DefinitionError, check_reference, count, find_net
from peer_protocol import (LAYOUTS, MODES, PRECISIONS, WARMUP_STEPS, benchmark_name, configure_torch, run_benchmark,
                           unsupported_precision)

PROG = "pytorch_nets.py"


class UsageError(Exception):
    """A bad request: reported as one line on stderr, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def parse_layouts(text):
    layouts = [word.strip() for word in text.split(",") if word.strip()]
    bad = [word for word in layouts if word not in LAYOUTS]
    if bad or not layouts:
        raise UsageError(f"bad --layouts {text!r} (expected a comma-separated list of {', '.join(LAYOUTS)})")
    return list(dict.fromkeys(layouts))


def parse_args(argv):
    parser = Parser(prog=PROG, description="PyTorch peer of build/bench_nets (same names, protocol, counters).")
    parser.add_argument("nets", nargs="*", metavar="NET", help="networks to run (default: all): " + ", ".join(NET_NAMES))
    parser.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--filter", default=".", help="regex on benchmark names, as --benchmark_filter "
                        "(a leading '-' negates; 'all' means every benchmark)")
    parser.add_argument("--precision", default="fp32", help="fp32 (TF32 off everywhere, the default); tf32 "
                        "(TF32 in cuDNN and matrix products); bf16 or fp16: automatic mixed precision (forward and "
                        "loss under torch.autocast, fp32 parameters, TF32 on for the remaining fp32 work on a GPU; "
                        "fp16 with torch.amp.GradScaler); names end in /tf32, /bf16 or /fp16, as bench_nets "
                        "--precision=...")
    parser.add_argument("--compile", action="store_true", help="also time each benchmark with the model under "
                        "torch.compile (default mode; compiled in the warm-up); names end in /compiled")
    parser.add_argument("--batch", type=int, help="batch size for every net (default: per net and device)")
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds of measured time per benchmark "
                        "(default 0.5, as Google Benchmark); at least 3 timed steps")
    parser.add_argument("--warmup", type=int, default=WARMUP_STEPS, help="untimed warm-up steps (default 10)")
    parser.add_argument("--threads", type=int, help="CPU threads for PyTorch (torch.set_num_threads; "
                        "default: PyTorch's own choice)")
    parser.add_argument("--channels-last", action="store_true", help="model and input in torch.channels_last "
                        "(names end in /channels_last); same as --layouts channels_last")
    parser.add_argument("--layouts", help="memory layouts to time, comma-separated: nchw, channels_last "
                        "(default nchw); 'nchw,channels_last' times both")
    parser.add_argument("--json", metavar="PATH", help="write Google-Benchmark-shaped JSON here")
    parser.add_argument("--list", action="store_true", help="check every selected network's parameter count, "
                        "print the benchmark names that would run, then exit")
    args = parser.parse_args(argv)
    unknown = [n for n in args.nets if find_net(n) is None]
    if unknown:
        raise UsageError(f"unknown net {unknown[0]!r} (known: {', '.join(NET_NAMES)})")
    args.specs = [find_net(n) for n in dict.fromkeys(n.lower() for n in args.nets)] or list(NETS)
    if args.channels_last and args.layouts is not None:
        raise UsageError("give --channels-last or --layouts, not both")
    args.layouts = ["channels_last"] if args.channels_last else parse_layouts(args.layouts or "nchw")
    if args.device is not None and args.device not in ("cpu", "cuda"):
        raise UsageError(f"bad device {args.device!r} (expected cpu or cuda)")
    if args.precision not in PRECISIONS:
        raise UsageError(f"bad --precision {args.precision!r} (expected one of {', '.join(PRECISIONS)})")
    if args.batch is not None and args.batch <= 0:
        raise UsageError(f"--batch must be a positive integer, got {args.batch}")
    if not (math.isfinite(args.min_time) and args.min_time > 0):  # inf would never end a benchmark
        raise UsageError(f"--min-time must be a finite number of seconds above 0, got {args.min_time}")
    if args.threads is not None and args.threads <= 0:
        raise UsageError(f"--threads must be a positive integer, got {args.threads}")
    if args.warmup < 0:
        raise UsageError(f"--warmup must be 0 or more, got {args.warmup}")
    try:
        args.filter_re = compile_filter(args.filter)
    except re.error as e:
        raise UsageError(f"bad --filter {args.filter!r}: {e}")
    return args


def compile_filter(text):
    """Google Benchmark's --benchmark_filter: a regex searched in the name,
    'all' for everything, a leading '-' for the benchmarks it does not match."""
    negate = text.startswith("-")
    if negate:
        text = text[1:]
    if text in ("", "all"):
        text = "."
    pattern = re.compile(text)
    return lambda name: bool(pattern.search(name)) != negate


def plan(args, device):
    """[(spec, mode, batch, layout, compiled, name)] in run order: per network,
    per layout, per mode, eager and then (with --compile) compiled."""
    planned = []
    for spec in args.specs:
        batch = args.batch or spec.default_batch(device)
        for layout in args.layouts:
            for mode in MODES:
                for compiled in (False, True) if args.compile else (False,):
                    name = benchmark_name(spec, mode, batch, layout, args.precision, compiled)
                    if args.filter_re(name):
                        planned.append((spec, mode, batch, layout, compiled, name))
    return planned


def checked_counts(specs):
    """{net name: (MACs per image, params)}, each checked against REFERENCE.md:
    raises DefinitionError on a wrong parameter count, warns on MACs."""
    counts = {}
    for spec in specs:
        counts[spec.name] = count(spec)
        for line in check_reference(spec, *counts[spec.name]):
            print(line, file=sys.stderr)
    return counts


def run_one(spec, mode, batch, layout, compiled, name, family, device, args, macs):
    import torch
    entry = {"name": name, "family_index": family, "per_family_instance_index": 0, "run_name": name,
             "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1}
    try:
        entry.update(run_benchmark(spec, mode, batch, device, layout, args.min_time, args.warmup, macs,
                                   args.precision, compiled))
    except (RuntimeError, MemoryError) as e:  # torch.cuda.OutOfMemoryError is a RuntimeError
        # The first line, and the next where the first only introduces it
        # (torch.compile's "backend='inductor' raised:").
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        message = " ".join(lines[:2] if len(lines) > 1 and lines[0].endswith(":") else lines[:1]) or type(e).__name__
        entry.update({"error_occurred": True, "error_message": message, "iterations": 0,
                      "real_time": 0, "cpu_time": 0, "time_unit": "ms"})
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
    return entry


def main(argv):
    args = parse_args(argv)
    try:
        import torch
        import torchvision
    except ImportError as e:
        raise UsageError(f"PyTorch and torchvision are needed: {e}")
    import peer_report

    cuda_ok = torch.cuda.is_available()
    device = args.device or ("cuda" if cuda_ok else "cpu")
    if device == "cuda" and not cuda_ok:
        raise UsageError("CUDA requested but not available to PyTorch (torch.cuda.is_available() is False)")
    configure_torch(torch, args.threads, args.precision, device)
    unsupported = unsupported_precision(torch, device, args.precision)
    if unsupported:
        raise UsageError(unsupported)
    if args.compile and not hasattr(torch, "compile"):
        raise UsageError(f"--compile needs torch.compile (PyTorch 2.0 or later), not in torch {torch.__version__}")

    planned = plan(args, device)
    if not planned:
        raise UsageError(f"no benchmark matches --filter {args.filter!r}")
    counts = checked_counts(dict.fromkeys(spec for spec, *_ in planned))
    if args.list:
        print("\n".join(name for *_, name in planned))
        return 0

    if device == "cuda":
        torch.ones(8, 8, device="cuda") @ torch.ones(8, 8, device="cuda")  # loads cuBLAS, for its version
        torch.cuda.synchronize()
    context = peer_report.make_context(torch, torchvision, device, counts, args)
    width = max(10, max(len(name) for *_, name in planned))
    peer_report.print_header(context, width)

    results = []
    for family, (spec, mode, batch, layout, compiled, name) in enumerate(planned):
        entry = run_one(spec, mode, batch, layout, compiled, name, family, device, args, counts[spec.name][0])
        results.append(entry)
        peer_report.print_row(entry, width)

    if args.json:
        try:
            peer_report.write_json(args.json, context, results)
        except OSError as e:
            raise UsageError(f"cannot write --json {args.json}: {e.strerror or e}")
    return 1 if any(entry.get("error_occurred") for entry in results) else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (UsageError, DefinitionError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        sys.exit(130)
