#!/usr/bin/env python3
"""bench/peers/pytorch_nets.py: the PyTorch (eager) peer of build/bench_nets.

Times the networks bench_nets times (LeNet, AlexNet, VGG11/13/16/19, built from
torchvision) with the same protocol, names and counters (DESIGN.md section 5),
so bench/compare.py can put the two side by side:

  names     <Net>/<mode>/batch:<N>; modes forward (training-mode forward + loss),
            forward_backward (+ backward, no update), train_step (zero grads +
            forward + backward + SGD lr 1e-4, momentum 0.9, weight decay 5e-4: Glassbox's
            settings, bench/support/net_session.h, Note [The benchmarks' learning rate])
  inputs    U(-1, 1) from a fixed seed, labels n % classes; fp32, TF32 off
  protocol  set-up untimed, 10 warm-up steps of the same mode, then timed steps
            (CUDA events around each step on the GPU, wall clock on the CPU)
            until --min-time seconds are measured (at least 3 steps); the mean
  counters  images/s = batch / mean step s
            TFLOP/s  = k * 2 * MACs * batch / mean step s / 1e12, k = 1 for
                       forward, 3 for forward_backward and train_step; MACs are
                       those of convolutions and linear layers, counted with
                       forward hooks (on the meta device, so counting is free)
            peak_memory = torch.cuda.max_memory_allocated over the timed steps
                       (reset after warm-up); 0 on the CPU (not measured)

Usage:
  python3 bench/peers/pytorch_nets.py [--device cpu|cuda] [--filter REGEX]
      [--batch N] [--min-time S] [--threads N] [--json PATH] [--list] [NET ...]

The JSON (--json) has Google Benchmark's shape ({"context", "benchmarks"}).
Errors are one line on stderr, exit status 2; a benchmark that fails at run
time (out of memory) is reported with error_occurred and the exit status is 1.
"""

import argparse
import datetime
import gc
import json
import os
import platform
import re
import socket
import subprocess
import sys
import time

NETS = ["LeNet", "AlexNet", "VGG11", "VGG13", "VGG16", "VGG19"]
MODES = ["forward", "forward_backward", "train_step"]
FLOP_FACTOR = {"forward": 1, "forward_backward": 3, "train_step": 3}
DEFAULT_BATCH = {
    "cuda": {"LeNet": 256, "AlexNet": 128, "VGG11": 64, "VGG13": 64, "VGG16": 64, "VGG19": 64},
    "cpu": {"LeNet": 64, "AlexNet": 16, "VGG11": 2, "VGG13": 2, "VGG16": 2, "VGG19": 2},
}
WARMUP_STEPS = 10
SEED = 1234

# REFERENCE.md, "Cost and size per network": forward GMAC at batch 1 (as
# printed there; the last digit sets the tolerance) and parameter counts.
REFERENCE = {
    "AlexNet": ("0.714", 61_100_840),
    "VGG11": ("7.609", 132_863_336),
    "VGG13": ("11.31", 133_047_848),
    "VGG16": ("15.470", 138_357_544),
    "VGG19": ("19.632", 143_667_240),
}

PROG = "pytorch_nets.py"


class UsageError(Exception):
    """A bad request: reported as one line on stderr, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def parse_args(argv):
    parser = Parser(prog=PROG, description="PyTorch peer of build/bench_nets (same names, protocol, counters).")
    parser.add_argument("nets", nargs="*", metavar="NET", help="networks to run (default: all): " + ", ".join(NETS))
    parser.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--filter", default=".", help="regex on benchmark names, as --benchmark_filter "
                        "(a leading '-' negates; 'all' means every benchmark)")
    parser.add_argument("--batch", type=int, help="batch size for every net (default: per net and device)")
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds of measured time per benchmark "
                        "(default 0.5, as Google Benchmark); at least 3 timed steps")
    parser.add_argument("--warmup", type=int, default=WARMUP_STEPS, help="untimed warm-up steps (default 10)")
    parser.add_argument("--threads", type=int, help="CPU threads for PyTorch (torch.set_num_threads; "
                        "default: PyTorch's own choice)")
    parser.add_argument("--json", metavar="PATH", help="write Google-Benchmark-shaped JSON here")
    parser.add_argument("--list", action="store_true", help="print the benchmark names that would run, then exit")
    args = parser.parse_args(argv)
    known = {n.lower(): n for n in NETS}
    unknown = [n for n in args.nets if n.lower() not in known]
    if unknown:
        raise UsageError(f"unknown net {unknown[0]!r} (known: {', '.join(NETS)})")
    args.nets = [known[n.lower()] for n in args.nets] or list(NETS)
    if args.device is not None and args.device not in ("cpu", "cuda"):
        raise UsageError(f"bad device {args.device!r} (expected cpu or cuda)")
    if args.batch is not None and args.batch <= 0:
        raise UsageError(f"--batch must be a positive integer, got {args.batch}")
    if not args.min_time > 0:
        raise UsageError(f"--min-time must be positive seconds, got {args.min_time}")
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


# ---- networks ---------------------------------------------------------------------

def input_shape(net):
    return (1, 28, 28) if net == "LeNet" else (3, 224, 224)


def classes(net):
    return 10 if net == "LeNet" else 1000


def build(net):
    """The network as a torch.nn.Module, on the current default device."""
    import torch.nn as nn
    import torchvision

    if net == "LeNet":
        return nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
            nn.Conv2d(6, 16, 5), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
            nn.Flatten(),
            nn.Linear(16 * 5 * 5, 120), nn.ReLU(inplace=True),
            nn.Linear(120, 84), nn.ReLU(inplace=True),
            nn.Linear(84, 10))
    make = {"AlexNet": torchvision.models.alexnet, "VGG11": torchvision.models.vgg11,
            "VGG13": torchvision.models.vgg13, "VGG16": torchvision.models.vgg16,
            "VGG19": torchvision.models.vgg19}[net]
    return make(weights=None, num_classes=classes(net))


def drop_identity_avgpool(model):
    """Replaces torchvision's AdaptiveAvgPool2d by Identity, as Glassbox omits
    it: at 224 its input is already 6x6 (AlexNet) or 7x7 (VGG), so it copies.
    Checked by count(), which raises if that ever stops being true."""
    import torch.nn as nn
    if isinstance(getattr(model, "avgpool", None), nn.AdaptiveAvgPool2d):
        model.avgpool = nn.Identity()
    return model


def count(net):
    """(MACs per image of Conv2d and Linear layers, parameter count), counted
    with forward hooks on a meta-device copy (shapes only, no arithmetic)."""
    import torch
    import torch.nn as nn

    with torch.device("meta"):
        model = build(net)
    model.eval()
    macs = 0

    def hook(module, inputs, output):
        nonlocal macs
        per_image = output.numel() // output.shape[0]
        if isinstance(module, nn.Conv2d):
            kh, kw = module.kernel_size
            macs += per_image * (module.in_channels // module.groups) * kh * kw
        elif isinstance(module, nn.Linear):
            macs += per_image * module.in_features

    def pool_hook(module, inputs, output):
        if tuple(inputs[0].shape) != tuple(output.shape):
            raise RuntimeError(f"{net}: AdaptiveAvgPool2d is not the identity here "
                               f"({tuple(inputs[0].shape)} -> {tuple(output.shape)})")

    for module in model.modules():
        if isinstance(module, (nn.Conv2d, nn.Linear)):
            module.register_forward_hook(hook)
        elif isinstance(module, nn.AdaptiveAvgPool2d):
            module.register_forward_hook(pool_hook)
    with torch.no_grad():
        model(torch.empty((1,) + input_shape(net), device="meta"))
    params = sum(p.numel() for p in model.parameters())
    return macs, params


def check_reference(net, macs, params):
    """Warnings (stderr) where the counts disagree with REFERENCE.md."""
    if net not in REFERENCE:
        return []
    text, ref_params = REFERENCE[net]
    decimals = len(text.split(".")[1]) if "." in text else 0
    tolerance = 0.5 * 10 ** -decimals  # half a unit in the last printed digit
    warnings = []
    gmac = macs / 1e9
    if abs(gmac - float(text)) > tolerance:
        warnings.append(f"warning: {net}: counted {gmac:.4f} GMAC per image, REFERENCE.md says {text}")
    if params != ref_params:
        warnings.append(f"warning: {net}: torchvision has {params:,} parameters, REFERENCE.md says {ref_params:,}")
    return warnings


# ---- one benchmark ------------------------------------------------------------------

def run_benchmark(net, mode, batch, device, args, macs):
    import torch
    import torch.nn as nn

    cuda = device == "cuda"
    torch.manual_seed(SEED)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    with torch.device(device):
        model = drop_identity_avgpool(build(net))
    model.train()
    generator = torch.Generator().manual_seed(SEED)
    x = (torch.rand((batch,) + input_shape(net), generator=generator) * 2 - 1).to(device)
    y = (torch.arange(batch) % classes(net)).to(device)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = None
    if mode == "train_step":
        optimizer = make_sgd(model.parameters())

    def step():
        if mode == "forward":
            loss_fn(model(x), y)  # autograd on, as the forward half of a training step
            return
        model.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        if optimizer is not None:
            optimizer.step()

    for _ in range(args.warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
        # Peak over the timed steps: model, optimizer state, inputs and the step's
        # own memory, without cudnn.benchmark's one-off search in warm-up.
        torch.cuda.reset_peak_memory_stats()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    times = []
    measured = 0.0
    cpu_start = time.thread_time()
    while measured < args.min_time or len(times) < 3:
        if cuda:
            start.record()
            step()
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / 1e3
        else:
            t0 = time.perf_counter()
            step()
            seconds = time.perf_counter() - t0
        times.append(seconds)
        measured += seconds
    cpu_seconds = time.thread_time() - cpu_start
    peak = torch.cuda.max_memory_allocated() if cuda else 0

    mean = measured / len(times)
    del model, optimizer, x, y
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return {
        "iterations": len(times),
        "real_time": mean * 1e3,
        "cpu_time": cpu_seconds / len(times) * 1e3,
        "time_unit": "ms",
        "TFLOP/s": FLOP_FACTOR[mode] * 2 * macs * batch / mean / 1e12,
        "images/s": batch / mean,
        "peak_memory": peak,
    }


def make_sgd(params):
    """SGD as the benchmarks specify; the fused (single-kernel) form where this
    PyTorch has it for the device, as Glassbox updates with one fused kernel."""
    import torch
    params = list(params)
    try:
        return torch.optim.SGD(params, lr=1e-4, momentum=0.9, weight_decay=5e-4, fused=True)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.SGD(params, lr=1e-4, momentum=0.9, weight_decay=5e-4)


def sgd_description(device):
    import torch
    with torch.device(device):
        probe = make_sgd([torch.nn.Parameter(torch.zeros(4))])
    form = "fused" if probe.defaults.get("fused") else ("foreach" if probe.defaults.get("foreach") else "default")
    return f"torch.optim.SGD(lr=1e-4, momentum=0.9, weight_decay=5e-4), {form} implementation"


# ---- context ------------------------------------------------------------------------

def read_cpuinfo():
    model, mhz = platform.processor() or "unknown", 0
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "model name" and model in ("unknown", "", platform.machine()):
                    model = value
                elif key == "cpu MHz" and not mhz:
                    mhz = int(float(value))
    except OSError:
        pass
    return model, mhz


def git_commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        commit = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
        if not commit:
            return "unknown"
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return commit + ("+uncommitted" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def loaded_library(prefix):
    """Path of a shared library this process has loaded (from /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                if os.path.basename(path).startswith(prefix + ".so"):
                    return path
    except OSError:
        pass
    return None


def cublas_version():
    """cuBLAS's own version, from the library PyTorch loaded (after a matmul)."""
    import ctypes
    path = loaded_library("libcublas")
    if not path:
        return "unknown"
    try:
        lib = ctypes.CDLL(path)
        parts = []
        for kind in range(3):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
            value = ctypes.c_int()
            if lib.cublasGetProperty(kind, ctypes.byref(value)) != 0:
                return "unknown"
            parts.append(str(value.value))
        return ".".join(parts)
    except (OSError, AttributeError):
        return "unknown"


def driver_version():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
        if out:
            return out.splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def math_mode(torch):
    legacy = (f"torch.backends.cuda.matmul.allow_tf32={torch.backends.cuda.matmul.allow_tf32}, "
              f"torch.backends.cudnn.allow_tf32={torch.backends.cudnn.allow_tf32}, "
              f"float32_matmul_precision={torch.get_float32_matmul_precision()}")
    return legacy + f", cudnn.benchmark={torch.backends.cudnn.benchmark}"


def make_context(torch, torchvision, device, counts, args):
    cpu_model, mhz = read_cpuinfo()
    cuda = device == "cuda"
    context = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host_name": socket.gethostname(),
        "executable": os.path.abspath(__file__),
        "num_cpus": os.cpu_count(),
        "mhz_per_cpu": mhz,
        "cpu_scaling_enabled": False,
        "load_avg": list(os.getloadavg()),
        "library_build_type": "release",
        "framework": "PyTorch (eager), torchvision models",
        "device": device,
        "device_name": torch.cuda.get_device_name() if cuda else cpu_model,
        "cpu": cpu_model,
        "precision": "fp32, TF32 off",
        "math_mode": math_mode(torch),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "python": platform.python_version(),
        "torch_num_threads": torch.get_num_threads(),
        "cuda_runtime": torch.version.cuda or "none",
        "cudnn": format_cudnn(torch.backends.cudnn.version()) if cuda else "not used",
        "cublas": cublas_version() if cuda else "not used",
        "nccl": nccl_version(torch) if cuda else "not used",
        "driver": driver_version() if cuda else "not used",
        "commit": git_commit(),
        "build": f"torch {torch.__version__} (pip), {sys.executable}",
        "protocol": (f"{args.warmup} warm-up steps, then timed steps until {args.min_time:g} s measured "
                     "(at least 3); " + ("CUDA events around each step" if cuda else "wall clock around each step")
                     + "; forward with autograd on; zero_grad(set_to_none=True) before forward_backward "
                       "and train_step"),
        "optimizer": sgd_description(device),
        "peak_memory_note": ("torch.cuda.max_memory_allocated over the timed steps (reset after warm-up, so "
                             "cudnn.benchmark's one-off algorithm search is excluded)" if cuda else
                             "peak_memory is not measured for PyTorch on the CPU (reported as 0)"),
        "model_note": "torchvision AlexNet/VGG with AdaptiveAvgPool2d replaced by Identity (the identity at 224)",
        "macs_per_image": {net: macs for net, (macs, _) in counts.items()},
        "params": {net: params for net, (_, params) in counts.items()},
    }
    return context


def nccl_version(torch):
    try:
        version = torch.cuda.nccl.version()
    except Exception:  # NCCL absent from this build, or not loadable
        return "unknown"
    return ".".join(map(str, version)) if isinstance(version, (tuple, list)) else str(version)


def format_cudnn(version):
    if not version:
        return "none"
    # cuDNN 9: major * 10000 + minor * 100 + patch (cuDNN 8: major * 1000 + minor * 100 + patch).
    major, rest = (version // 10000, version % 10000) if version >= 90000 else (version // 1000, version % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


# ---- console output, as Google Benchmark prints it -------------------------------------

def human(value, one_k=1000):
    prefixes = ["", "k", "M", "G", "T", "P"] if one_k == 1000 else ["", "Ki", "Mi", "Gi", "Ti", "Pi"]
    i = 0
    while abs(value) >= one_k and i < len(prefixes) - 1:
        value /= one_k
        i += 1
    return f"{value:.4g}{prefixes[i]}"


def format_time(t):
    if t < 1.0:
        return f"{t:10.3f}"
    if t < 10.0:
        return f"{t:10.2f}"
    if t < 100.0:
        return f"{t:10.1f}"
    if t > 9999999999:
        return f"{t:1.4e}"
    return f"{t:10.0f}"


def print_header(context, width):
    print(f"Running {context['executable']}")
    print(f"Run on {context['device_name']} ({context['device']}); {context['num_cpus']} X {context['mhz_per_cpu']} "
          f"MHz CPU s, {context['cpu']}")
    print(f"torch {context['torch']}, torchvision {context['torchvision']}, CUDA {context['cuda_runtime']}, "
          f"cuDNN {context['cudnn']}, cuBLAS {context['cublas']}, driver {context['driver']}")
    print(f"{context['precision']}: {context['math_mode']}")
    header = f"{'Benchmark':<{width}} {'Time':>13} {'CPU':>15} {'Iterations':>12} UserCounters..."
    print("-" * len(header))
    print(header)
    print("-" * len(header))
    sys.stdout.flush()


def print_row(result, width):
    if result.get("error_occurred"):
        print(f"{result['name']:<{width}} ERROR OCCURRED: '{result['error_message']}'", flush=True)
        return
    unit = result["time_unit"]
    counters = (f"TFLOP/s={human(result['TFLOP/s'])} images/s={human(result['images/s'])} "
                f"peak_memory={human(result['peak_memory'], 1024)}")
    print(f"{result['name']:<{width}} {format_time(result['real_time'])} {unit:<2} "
          f"{format_time(result['cpu_time'])} {unit:<2} {result['iterations']:>12} {counters}", flush=True)


# ---- main -----------------------------------------------------------------------

def main(argv):
    args = parse_args(argv)
    try:
        import torch
        import torchvision
    except ImportError as e:
        raise UsageError(f"PyTorch and torchvision are needed: {e}")

    cuda_ok = torch.cuda.is_available()
    device = args.device or ("cuda" if cuda_ok else "cpu")
    if device == "cuda" and not cuda_ok:
        raise UsageError("CUDA requested but not available to PyTorch (torch.cuda.is_available() is False)")

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")

    planned = []
    for net in args.nets:
        batch = args.batch or DEFAULT_BATCH[device][net]
        for mode in MODES:
            name = f"{net}/{mode}/batch:{batch}"
            if args.filter_re(name):
                planned.append((net, mode, batch, name))
    if not planned:
        raise UsageError(f"no benchmark matches --filter {args.filter!r}")
    if args.list:
        print("\n".join(name for *_, name in planned))
        return 0

    counts = {}
    for net in dict.fromkeys(net for net, *_ in planned):
        counts[net] = count(net)
        for line in check_reference(net, *counts[net]):
            print(line, file=sys.stderr)
    if device == "cuda":
        torch.ones(8, 8, device="cuda") @ torch.ones(8, 8, device="cuda")  # loads cuBLAS, for its version
        torch.cuda.synchronize()
    context = make_context(torch, torchvision, device, counts, args)
    width = max(10, max(len(name) for *_, name in planned))
    print_header(context, width)

    results = []
    failed = False
    for family, (net, mode, batch, name) in enumerate(planned):
        entry = {"name": name, "family_index": family, "per_family_instance_index": 0, "run_name": name,
                 "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1}
        try:
            entry.update(run_benchmark(net, mode, batch, device, args, counts[net][0]))
        except (RuntimeError, MemoryError) as e:  # torch.cuda.OutOfMemoryError is a RuntimeError
            failed = True
            message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            entry.update({"error_occurred": True, "error_message": message, "iterations": 0,
                          "real_time": 0, "cpu_time": 0, "time_unit": "ms"})
            gc.collect()
            if device == "cuda":
                torch.cuda.empty_cache()
        results.append(entry)
        print_row(entry, width)

    if args.json:
        try:
            os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
            with open(args.json, "w") as f:
                json.dump({"context": context, "benchmarks": results}, f, indent=2)
                f.write("\n")
        except OSError as e:
            raise UsageError(f"cannot write --json {args.json}: {e.strerror or e}")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        sys.exit(130)
