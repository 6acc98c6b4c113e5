"""bench/peers/peer_report.py: what the peer reports, shaped as Google
Benchmark reports it: the run's context (device, versions, math mode, commit,
protocol), the console table, and the JSON file ({"context", "benchmarks"})
that bench/compare.py reads beside bench_nets' own.
"""

import datetime
import json
import os
import platform
import socket
import subprocess
import sys

from peer_protocol import AMP_DTYPES, CONTEXT_PRECISION, sgd_description


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
    limit = getattr(torch.backends.cudnn, "benchmark_limit", None)
    return legacy + f", cudnn.benchmark={torch.backends.cudnn.benchmark}" + \
        (f", cudnn.benchmark_limit={limit}" if limit is not None else "")


def mixed_precision(device, precision):
    """What a mixed precision runs, for the context; "not used" for fp32 and tf32."""
    if precision not in AMP_DTYPES:
        return "not used"
    text = (f"torch.autocast(device_type={device!r}, dtype=torch.{AMP_DTYPES[precision]}) over forward and loss; "
            "parameters fp32 (master weights)")
    if device == "cuda":
        text += "; TF32 on for the remaining fp32 work"
    if precision == "fp16":
        return text + ("; torch.amp.GradScaler (defaults): train_step scale(loss).backward(), scaler.step, "
                       "scaler.update; forward_backward scale(loss).backward()")
    return text + "; no loss scaling"


def make_context(torch, torchvision, device, counts, args):
    cpu_model, mhz = read_cpuinfo()
    cuda = device == "cuda"
    context = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host_name": socket.gethostname(),
        "executable": sys.argv[0],
        "num_cpus": os.cpu_count(),
        "mhz_per_cpu": mhz,
        "cpu_scaling_enabled": False,
        "load_avg": list(os.getloadavg()),
        "library_build_type": "release",
        "framework": "PyTorch (eager), torchvision models where torchvision has the network",
        "device": device,
        "device_name": torch.cuda.get_device_name() if cuda else cpu_model,
        "cpu": cpu_model,
        # Spelled as Glassbox's context spells it (tensor/context.cpp), so that
        # bench/compare.py reads the two sides' precision as one.
        "precision": CONTEXT_PRECISION[args.precision],
        "mixed_precision": mixed_precision(device, args.precision),
        "math_mode": math_mode(torch),
        "compile": ("torch.compile(model), default mode, compiled in the warm-up steps (at least one); "
                    "names end in /compiled" if args.compile else "not used (eager only)"),
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
        "build": f"torch {torch.__version__} (pip), Python {platform.python_version()}",
        "protocol": (f"{args.warmup} warm-up steps, then timed steps until {args.min_time:g} s measured "
                     "(at least 3); " + ("CUDA events around each step" if cuda else "wall clock around each step")
                     + "; forward with autograd on; zero_grad(set_to_none=True) before forward_backward "
                       "and train_step; inference: eval() under torch.inference_mode(), forward and loss"),
        "layouts": ", ".join(args.layouts),
        "optimizer": sgd_description(device),
        "peak_memory_note": ("torch.cuda.max_memory_allocated over the timed steps (reset after warm-up, so "
                             "cudnn.benchmark's one-off algorithm search is excluded)" if cuda else
                             ("peak_memory is not measured here on the CPU (reported as 0); bench/peers/peak_memory.py "
                              "measures it as max RSS in a fresh process")),
        "model_note": ("torchvision AlexNet/VGG with AdaptiveAvgPool2d replaced by Identity (the identity at 224); "
                       "GoogLeNet and InceptionV3 without aux heads; LeNet, Overfeat, ResNet56, Xception, FCN5 "
                       "defined in bench/peers/peer_custom_models.py"),
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
    if context["mixed_precision"] != "not used":
        print(f"mixed precision: {context['mixed_precision']}")
    if context["compile"].startswith("torch.compile"):
        print(f"compiled rows: {context['compile']}")
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


def write_json(path, context, results):
    """Raises OSError; the caller reports it."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"context": context, "benchmarks": results}, f, indent=2)
        f.write("\n")
