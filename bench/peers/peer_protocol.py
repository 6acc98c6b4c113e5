"""bench/peers/peer_protocol.py: what one timed step is, and how it is timed
and counted: bench_nets' protocol (DESIGN.md section 5) in PyTorch.

  forward           model.train(), forward + loss, autograd on (the forward
                    half of a training step)
  forward_backward  zero_grad(set_to_none=True) + forward + loss + backward
  train_step        the same + SGD step (lr 1e-4, momentum 0.9, weight decay
                    5e-4: Glassbox's kBenchmarkSgd, bench/support/net_session.h)
  inference         model.eval() under torch.inference_mode(): forward + loss,
                    no autograd (batch norm uses its running statistics, dropout
                    is off). The loss because Glassbox's inference graph ends in
                    its loss layer too: the same work on both sides (results
                    from before 2026-11-25 left the loss out; only the language
                    models' 10,000-way softmax made that matter, 2% of LSTM's
                    step).

Layouts: nchw (PyTorch's default, contiguous) or channels_last (model and
input in torch.channels_last, NHWC in memory).

Precisions: fp32 (TF32 off), tf32 (TF32 in cuDNN and matrix products), and
PyTorch's automatic mixed precision, bf16 or fp16: forward and loss under
torch.autocast(device, bfloat16 or float16), parameters kept in fp32 (the
master weights), TF32 on for the fp32 work left on a GPU. fp16 scales the
loss with torch.amp.GradScaler (its defaults): train_step runs
scale(loss).backward(), scaler.step(optimizer), scaler.update();
forward_backward runs scale(loss).backward(), the backward an fp16 step runs.
bf16 needs no scaling: loss.backward() and optimizer.step().

Compiled: the model wrapped in torch.compile (default mode) and stepped as
above; compilation happens in the warm-up steps, outside the timing.
"""

import contextlib
import gc
import time

MODES = ["forward", "forward_backward", "train_step", "inference"]
BACKWARD_MODES = ("forward_backward", "train_step")
FLOP_FACTOR = {"forward": 1, "forward_backward": 3, "train_step": 3, "inference": 1}
LAYOUTS = ["nchw", "channels_last"]
WARMUP_STEPS = 10
SEED = 1234
SGD_SETTINGS = dict(lr=1e-4, momentum=0.9, weight_decay=5e-4)


PRECISIONS = ["fp32", "tf32", "bf16", "fp16"]
AMP_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}  # autocast's torch dtype per mixed precision
COMPILED_SUFFIX = "/compiled"  # names of the torch.compile runs (bench/compare.py pairs them by it)

# The report's "precision", spelled as Glassbox's context spells it (tensor/context.cpp),
# so that bench/compare.py reads the two sides' precision as one.
CONTEXT_PRECISION = {
    "fp32": "fp32 (TF32 off)",
    "tf32": "tf32",
    "bf16": "bf16 (mixed: 16-bit values, fp32 master weights and accumulation)",
    "fp16": "fp16 (mixed: 16-bit values, fp32 master weights and accumulation; a training step scales the loss)",
}


def benchmark_name(spec, mode, batch, layout, precision="fp32", compiled=False):
    """<Net>/<mode>/batch:<N>, then /tf32, /bf16 or /fp16 for that precision
    (as bench_nets names it), then /channels_last for that layout and
    /compiled for a torch.compile run (both of which bench/compare.py strips
    to find Glassbox's benchmark of the same name)."""
    return (f"{spec.name}/{mode}/batch:{batch}" + (f"/{precision}" if precision != "fp32" else "")
            + ("/channels_last" if layout == "channels_last" else "") + (COMPILED_SUFFIX if compiled else ""))


def configure_torch(torch, threads=None, precision="fp32", device="cuda"):
    """Measured cuDNN algorithm choice, and fp32 without TF32 on every path, or
    TF32 on every path (convolutions and matrix products) for precision tf32,
    as bench_nets --precision=tf32 allows Tensor Core TF32 in cuDNN and cuBLAS.
    The mixed precisions on a GPU turn TF32 on as well, for the fp32 work that
    autocast leaves (a typical AMP run); on the CPU they leave fp32 as it is.
    PyTorch's defaults are mixed (cuDNN TF32 on, matmul off), so both flags
    are set explicitly. cudnn.benchmark times every algorithm cuDNN offers
    (benchmark_limit 0; PyTorch's default stops at 10), as bench_nets
    --cudnn-search times all of its candidates."""
    if threads:
        torch.set_num_threads(threads)
    tf32 = precision == "tf32" or (precision in AMP_DTYPES and device == "cuda")
    torch.backends.cudnn.benchmark = True
    if hasattr(torch.backends.cudnn, "benchmark_limit"):
        torch.backends.cudnn.benchmark_limit = 0
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")


def unsupported_precision(torch, device, precision):
    """Why this PyTorch cannot run `precision` on `device` as specified, or None.
    A probe product under autocast must come out in the 16-bit type: a PyTorch
    without the pair disables autocast with a warning and would time fp32.
    fp16 needs torch.amp.GradScaler for the device (PyTorch 2.3 and later)."""
    if precision not in AMP_DTYPES:
        return None
    dtype = getattr(torch, AMP_DTYPES[precision])
    what = f"--precision {precision} on --device {device} (torch.autocast with torch.{AMP_DTYPES[precision]})"
    if device == "cuda" and precision == "bf16" and not torch.cuda.is_bf16_supported():
        return f"{what}: this GPU has no bfloat16 (torch.cuda.is_bf16_supported() is False)"
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.autocast(device_type=device, dtype=dtype):
                probe = torch.ones(8, 8, device=device) @ torch.ones(8, 8, device=device)
    except (RuntimeError, ValueError, AssertionError) as e:
        return f"{what} is not supported by torch {torch.__version__}: {str(e).strip().splitlines()[0]}"
    if probe.dtype != dtype:
        return (f"{what} is not supported by torch {torch.__version__}: autocast computed a matrix product "
                f"in {probe.dtype}")
    if precision == "fp16":
        scaler_class = getattr(getattr(torch, "amp", None), "GradScaler", None)
        if scaler_class is None:
            return f"{what} needs torch.amp.GradScaler (PyTorch 2.3 or later), not in torch {torch.__version__}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                enabled = scaler_class(device).is_enabled()
        except (RuntimeError, ValueError, AssertionError) as e:
            return f"{what}: torch.amp.GradScaler({device!r}) fails: {str(e).strip().splitlines()[0]}"
        if not enabled:
            return f"{what}: torch.amp.GradScaler({device!r}) disables itself in torch {torch.__version__}"
    return None


def make_sgd(params):
    """SGD as the benchmarks specify; the fused (single-kernel) form where this
    PyTorch has it for the device, as Glassbox updates with one fused kernel."""
    import torch
    params = list(params)
    try:
        return torch.optim.SGD(params, **SGD_SETTINGS, fused=True)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.SGD(params, **SGD_SETTINGS)


def sgd_description(device):
    import torch
    with torch.device(device):
        probe = make_sgd([torch.nn.Parameter(torch.zeros(4))])
    form = "fused" if probe.defaults.get("fused") else ("foreach" if probe.defaults.get("foreach") else "default")
    return f"torch.optim.SGD(lr=1e-4, momentum=0.9, weight_decay=5e-4), {form} implementation"


class Session:
    """A network with its inputs (seeded U(-1, 1) images, labels n % classes)
    and optimizer, ready to step in one mode, layout and precision, eager or
    under torch.compile. Set-up is untimed."""

    def __init__(self, spec, mode, batch, device, layout, precision="fp32", compiled=False):
        import torch
        import torch.nn as nn
        from peer_models import build_for_timing

        self.mode = mode
        self.compiled = compiled
        torch.manual_seed(SEED)
        with torch.device(device):
            self.model = build_for_timing(spec)
        self.model.train(mode != "inference")
        generator = torch.Generator().manual_seed(SEED)
        self.x = (torch.rand((batch,) + spec.sample, generator=generator) * 2 - 1).to(device)
        if layout == "channels_last":
            self.model = self.model.to(memory_format=torch.channels_last)
            self.x = self.x.contiguous(memory_format=torch.channels_last)
        self.y = (torch.arange(batch) % spec.classes).to(device)
        self.loss_fn = nn.CrossEntropyLoss()
        self.optimizer = make_sgd(self.model.parameters()) if mode == "train_step" else None
        self.inference_mode = torch.inference_mode
        # Mixed precision: autocast over forward and loss; the parameters stay fp32.
        if precision in AMP_DTYPES:
            dtype = getattr(torch, AMP_DTYPES[precision])
            self.autocast = lambda: torch.autocast(device_type=device, dtype=dtype)
        else:
            self.autocast = contextlib.nullcontext
        # fp16's loss scaling, in the modes with a backward.
        self.scaler = torch.amp.GradScaler(device) if precision == "fp16" and mode in BACKWARD_MODES else None
        if compiled:
            # A fresh compilation for each benchmark: dynamo's cache of earlier
            # models would otherwise fill (cache_size_limit) and fall back to eager.
            torch._dynamo.reset()
            self.model = torch.compile(self.model)

    def loss(self):
        with self.autocast():
            return self.loss_fn(self.model(self.x), self.y)

    def step(self):
        if self.mode == "inference":
            with self.inference_mode():
                self.loss()
            return
        if self.mode == "forward":
            self.loss()  # autograd on, as the forward half of a training step
            return
        self.model.zero_grad(set_to_none=True)
        loss = self.loss()
        if self.scaler is None:
            loss.backward()
            if self.optimizer is not None:
                self.optimizer.step()
            return
        self.scaler.scale(loss).backward()
        if self.optimizer is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()

    def close(self):
        """Frees the model, optimizer and inputs (and, on the GPU, the cached blocks)."""
        import torch
        del self.model, self.optimizer, self.scaler, self.x, self.y
        if self.compiled:
            torch._dynamo.reset()
        gc.collect()
        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()


def run_benchmark(spec, mode, batch, device, layout, min_time, warmup, macs, precision="fp32", compiled=False):
    """One benchmark: set-up, `warmup` untimed steps, then timed steps until
    `min_time` seconds are measured (at least 3); Google Benchmark's fields
    and bench_nets' counters from the mean step. A compiled run takes at
    least one warm-up step, the one that compiles."""
    import torch

    cuda = device == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    session = Session(spec, mode, batch, device, layout, precision, compiled)
    try:  # closed on a failure too, so that the next benchmark in this process starts clean
        for _ in range(max(warmup, 1) if compiled else warmup):
            session.step()
        if cuda:
            torch.cuda.synchronize()
            # Peak over the timed steps: model, optimizer state, inputs and the step's
            # own memory, without cudnn.benchmark's one-off search in warm-up.
            torch.cuda.reset_peak_memory_stats()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

        times = []
        measured = 0.0
        cpu_start = time.thread_time()
        while measured < min_time or len(times) < 3:
            if cuda:
                start.record()
                session.step()
                end.record()
                end.synchronize()
                seconds = start.elapsed_time(end) / 1e3
            else:
                t0 = time.perf_counter()
                session.step()
                seconds = time.perf_counter() - t0
            times.append(seconds)
            measured += seconds
        cpu_seconds = time.thread_time() - cpu_start
        peak = torch.cuda.max_memory_allocated() if cuda else 0
    finally:
        session.close()

    mean = measured / len(times)
    return {
        "iterations": len(times),
        "real_time": mean * 1e3,
        "cpu_time": cpu_seconds / len(times) * 1e3,
        "time_unit": "ms",
        "TFLOP/s": FLOP_FACTOR[mode] * 2 * macs * batch / mean / 1e12,
        "images/s": batch / mean,
        "peak_memory": peak,
    }
