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
"""

import gc
import time

MODES = ["forward", "forward_backward", "train_step", "inference"]
FLOP_FACTOR = {"forward": 1, "forward_backward": 3, "train_step": 3, "inference": 1}
LAYOUTS = ["nchw", "channels_last"]
WARMUP_STEPS = 10
SEED = 1234
SGD_SETTINGS = dict(lr=1e-4, momentum=0.9, weight_decay=5e-4)


PRECISIONS = ["fp32", "tf32"]


def benchmark_name(spec, mode, batch, layout, precision="fp32"):
    """<Net>/<mode>/batch:<N>, then /tf32 for that precision (as bench_nets
    names it), then /channels_last for that layout (which bench/compare.py
    strips to find Glassbox's benchmark of the same name)."""
    return (f"{spec.name}/{mode}/batch:{batch}" + ("/tf32" if precision == "tf32" else "")
            + ("/channels_last" if layout == "channels_last" else ""))


def configure_torch(torch, threads=None, precision="fp32"):
    """Measured cuDNN algorithm choice, and fp32 without TF32 on every path, or
    TF32 on every path (convolutions and matrix products) for precision tf32,
    as bench_nets --precision=tf32 allows Tensor Core TF32 in cuDNN and cuBLAS.
    PyTorch's defaults are mixed (cuDNN TF32 on, matmul off), so both flags
    are set explicitly."""
    if threads:
        torch.set_num_threads(threads)
    tf32 = precision == "tf32"
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")


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
    and optimizer, ready to step in one mode and layout. Set-up is untimed."""

    def __init__(self, spec, mode, batch, device, layout):
        import torch
        import torch.nn as nn
        from peer_models import build_for_timing

        self.mode = mode
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

    def step(self):
        if self.mode == "inference":
            with self.inference_mode():
                self.loss_fn(self.model(self.x), self.y)
            return
        if self.mode == "forward":
            self.loss_fn(self.model(self.x), self.y)  # autograd on, as the forward half of a training step
            return
        self.model.zero_grad(set_to_none=True)
        self.loss_fn(self.model(self.x), self.y).backward()
        if self.optimizer is not None:
            self.optimizer.step()

    def close(self):
        """Frees the model, optimizer and inputs (and, on the GPU, the cached blocks)."""
        import torch
        del self.model, self.optimizer, self.x, self.y
        gc.collect()
        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()


def run_benchmark(spec, mode, batch, device, layout, min_time, warmup, macs):
    """One benchmark: set-up, `warmup` untimed steps, then timed steps until
    `min_time` seconds are measured (at least 3); Google Benchmark's fields
    and bench_nets' counters from the mean step."""
    import torch

    cuda = device == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    session = Session(spec, mode, batch, device, layout)
    for _ in range(warmup):
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
