#!/usr/bin/env python3
"""bench/peers/peak_memory.py: PyTorch's peak memory for a network, batch,
mode and layout, stepped as pytorch_nets.py steps it (peer_protocol.Session),
to set beside Glassbox's peak_memory counter.

  GPU  torch.cuda.max_memory_allocated over the timed steps, reset after the
       warm-up (as pytorch_nets.py reports it): model, gradients, optimizer
       state, inputs and the step's own tensors; not the caching allocator's
       reserve, cuDNN's or cuBLAS's workspaces outside it, nor the CUDA context
  CPU  the process's max RSS (getrusage ru_maxrss) minus its RSS just before
       the model was built: everything the model, inputs, steps and the
       libraries' own buffers made resident. Max RSS never falls, so each
       (network, mode, layout) runs in a fresh child process, and the peak
       includes warm-up (on the CPU, no one-off search makes warm-up larger).
       RSS also counts memory glibc's malloc keeps after a free: ResNet50
       batch 2 forward_backward read 649 MiB, 523 MiB with
       MALLOC_MMAP_THRESHOLD_=131072 (freed blocks go back at once)

Each child also checks the network's parameter count against REFERENCE.md.

Usage:
  python3 bench/peers/peak_memory.py [--device cpu|cuda] [--batch N]
      [--modes M,M] [--layouts L,L] [--warmup N] [--steps N] [--threads N]
      [--json PATH] NET ...

Prints a table (MiB = 2^20 bytes) and, with --json, writes Google-Benchmark-
shaped JSON ({"context", "benchmarks"}, peak_memory in bytes). Errors are one
line on stderr, exit status 2; a measurement that fails (out of memory, a
crash) is reported in its row and the exit status is 1.
"""

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys

from peer_models import NET_NAMES, DefinitionError, find_net
from peer_protocol import LAYOUTS, MODES, benchmark_name

PROG = "peak_memory.py"
MARK = "peak_memory.py result: "  # the child's result line on stdout


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def word_list(text, allowed, flag):
    words = list(dict.fromkeys(w.strip() for w in text.split(",") if w.strip()))
    if not words or any(w not in allowed for w in words):
        raise UsageError(f"bad {flag} {text!r} (expected a comma-separated list of {', '.join(allowed)})")
    return words


def parse_args(argv):
    parser = Parser(prog=PROG, description="PyTorch's peak memory per network, batch, mode and layout.")
    parser.add_argument("nets", nargs="*", metavar="NET", help="networks (default: all): " + ", ".join(NET_NAMES))
    parser.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--batch", type=int, help="batch size for every net (default: per net and device)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated (default: all four)")
    parser.add_argument("--layouts", default="nchw", help="nchw and/or channels_last (default nchw)")
    parser.add_argument("--warmup", type=int, default=2, help="steps before the measured ones (default 2: "
                        "the optimizer's momentum buffers exist from the first train step on)")
    parser.add_argument("--steps", type=int, default=3, help="measured steps (default 3)")
    parser.add_argument("--threads", type=int, help="CPU threads for PyTorch (default: PyTorch's own choice)")
    parser.add_argument("--json", metavar="PATH", help="write the results here")
    args = parser.parse_args(argv)
    unknown = [n for n in args.nets if find_net(n) is None]
    if unknown:
        raise UsageError(f"unknown net {unknown[0]!r} (known: {', '.join(NET_NAMES)})")
    args.nets = [find_net(n).name for n in dict.fromkeys(n.lower() for n in args.nets)] or list(NET_NAMES)
    args.modes = word_list(args.modes, MODES, "--modes")
    args.layouts = word_list(args.layouts, LAYOUTS, "--layouts")
    if args.device is not None and args.device not in ("cpu", "cuda"):
        raise UsageError(f"bad device {args.device!r} (expected cpu or cuda)")
    for flag, value, least in (("--batch", args.batch, 1), ("--threads", args.threads, 1),
                               ("--warmup", args.warmup, 0), ("--steps", args.steps, 1)):
        if value is not None and value < least:
            raise UsageError(f"{flag} must be {least} or more, got {value}")
    return args


# ---- the child: one measurement in a fresh process -------------------------------------

def resident_bytes():
    """This process's RSS now (Linux /proc/self/statm; elsewhere its max RSS so far)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return max_rss_bytes()


def max_rss_bytes():
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def measure(job):
    import torch
    from peer_protocol import Session, configure_torch

    configure_torch(torch, job["threads"])
    spec = find_net(job["net"])
    cuda = job["device"] == "cuda"
    rss_before = resident_bytes()
    session = Session(spec, job["mode"], job["batch"], job["device"], job["layout"])
    params = sum(p.numel() for p in session.model.parameters())
    if params != spec.params:
        raise DefinitionError(f"{spec.name}: the peer's definition has {params:,} parameters, "
                              f"REFERENCE.md says {spec.params:,}")
    for _ in range(job["warmup"]):
        session.step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    for _ in range(job["steps"]):
        session.step()
    if cuda:
        torch.cuda.synchronize()
        return {"peak_memory": torch.cuda.max_memory_allocated(), "method": "torch.cuda.max_memory_allocated"}
    max_rss = max_rss_bytes()
    return {"peak_memory": max_rss - rss_before, "method": "max RSS - RSS before the model was built",
            "rss_before_build": rss_before, "max_rss": max_rss}


def child_main(job_text):
    try:
        result = measure(json.loads(job_text))
    except DefinitionError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    print(MARK + json.dumps(result), flush=True)
    return 0


# ---- the parent: a child per measurement, then the table --------------------------------

def run_child(job):
    """The child's result, or {"error_occurred", "error_message"}."""
    command = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(job)]
    done = subprocess.run(command, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    message = lines[-1] if lines else f"child exited with status {done.returncode} and said nothing"
    return {"error_occurred": True, "error_message": message}


def mib(value):
    return f"{value / 2**20:.1f}"


def main(argv):
    args = parse_args(argv)
    try:
        import torch
    except ImportError as e:
        raise UsageError(f"PyTorch and torchvision are needed: {e}")
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError("CUDA requested but not available to PyTorch (torch.cuda.is_available() is False)")

    jobs = []
    for net in args.nets:
        batch = args.batch or find_net(net).default_batch(device)
        for layout in args.layouts:
            for mode in args.modes:
                jobs.append({"net": net, "mode": mode, "batch": batch, "layout": layout, "device": device,
                             "warmup": args.warmup, "steps": args.steps, "threads": args.threads})
    width = max(len(benchmark_name(find_net(j["net"]), j["mode"], j["batch"], j["layout"])) for j in jobs)
    method = ("torch.cuda.max_memory_allocated over the measured steps" if device == "cuda"
              else "max RSS - RSS before the model was built, fresh process each")
    print(f"PyTorch {torch.__version__} peak memory on {device} ({method}); "
          f"{args.warmup} warm-up + {args.steps} measured steps")
    rss_columns = "   RSS before build MiB  max RSS MiB" if device == "cpu" else ""
    print(f"{'Benchmark':<{width}} {'peak MiB':>10}{rss_columns}")
    results = []
    for job in jobs:
        name = benchmark_name(find_net(job["net"]), job["mode"], job["batch"], job["layout"])
        entry = {"name": name, "run_name": name, "run_type": "iteration", **job, **run_child(job)}
        results.append(entry)
        if entry.get("error_occurred"):
            print(f"{name:<{width}} ERROR: {entry['error_message']}", flush=True)
        elif device == "cpu":
            print(f"{name:<{width}} {mib(entry['peak_memory']):>10}   {mib(entry['rss_before_build']):>20}"
                  f"  {mib(entry['max_rss']):>11}", flush=True)
        else:
            print(f"{name:<{width}} {mib(entry['peak_memory']):>10}", flush=True)

    if args.json:
        context = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                   "executable": os.path.abspath(__file__), "device": device, "torch": torch.__version__,
                   "python": platform.python_version(), "method": method, "warmup": args.warmup,
                   "steps": args.steps, "threads": args.threads or "PyTorch's default"}
        try:
            os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
            with open(args.json, "w") as f:
                json.dump({"context": context, "benchmarks": results}, f, indent=2)
                f.write("\n")
        except OSError as e:
            raise UsageError(f"cannot write --json {args.json}: {e.strerror or e}")
    return 1 if any(r.get("error_occurred") for r in results) else 0


if __name__ == "__main__":
    try:
        if len(sys.argv) == 3 and sys.argv[1] == "--child":
            sys.exit(child_main(sys.argv[2]))
        sys.exit(main(sys.argv[1:]))
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        sys.exit(130)
