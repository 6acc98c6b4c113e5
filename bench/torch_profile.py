#!/usr/bin/env python3
"""bench/torch_profile.py: where PyTorch's time goes in one benchmark network,
by operator, to set beside `glassbox time NET --batch N --device cpu|cuda`.

Builds the network and steps it as bench/peers/pytorch_nets.py does
(peer_protocol.Session: the same inputs, loss, optimizer, precision and
math mode), runs three untimed steps, then STEPS steps under torch.profiler,
and prints each operator's self time per step. On the CPU that is CPU time;
on a GPU (--device cuda) the profiler records CUDA too, and an operator's
self time is that of the kernels it launched (CUDA time), by which the
operators are sorted, with its CPU time beside it. With --shapes, the
convolutions and max poolings split by input shape.

Usage (with a Python that has PyTorch, as the peer uses):
  python3 bench/torch_profile.py NET BATCH {forward,forward_backward,train_step,inference}
      [--device cpu|cuda] [--precision fp32|tf32|bf16|fp16] [--layout channels_last|nchw]
      [--steps 3] [--threads 2] [--shapes]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
from peer_models import find_net  # noqa: E402  (after the path is set)
from peer_protocol import CONTEXT_PRECISION, MODES, PRECISIONS  # noqa: E402
from results_io import positive_int  # noqa: E402

# The convolutions (oneDNN, cuDNN, and the slow path the CPU takes for some
# 16-bit convolutions) and max poolings.
SHAPE_OPS = ("aten::mkldnn_convolution", "aten::cudnn_convolution", "aten::convolution_backward",
             "aten::_slow_conv2d_forward", "aten::_slow_conv2d_backward",
             "aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward")


def self_device_us(event):
    """An operator's self device time in microseconds (PyTorch before 2.4 calls it CUDA time)."""
    value = getattr(event, "self_device_time_total", None)
    return value if value is not None else event.self_cuda_time_total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("net")
    parser.add_argument("batch", type=positive_int)
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="as pytorch_nets.py --precision (bf16, fp16: torch.autocast, fp16 with a GradScaler)")
    parser.add_argument("--layout", choices=["channels_last", "nchw"], default="channels_last")
    parser.add_argument("--steps", type=positive_int, default=3)
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--shapes", action="store_true", help="convolutions and max poolings by input shape")
    args = parser.parse_args()
    spec = find_net(args.net)
    if spec is None:
        parser.error(f"unknown net {args.net!r}")

    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    from peer_protocol import Session, configure_torch, unsupported_precision

    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        parser.error("CUDA requested but not available to PyTorch (torch.cuda.is_available() is False)")
    configure_torch(torch, args.threads, args.precision, args.device)
    unsupported = unsupported_precision(torch, args.device, args.precision)
    if unsupported:
        parser.error(unsupported)
    session = Session(spec, args.mode, args.batch, args.device, args.layout, args.precision)

    for _ in range(3):
        session.step()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    if cuda:
        torch.cuda.synchronize()
    with profile(activities=activities, record_shapes=args.shapes) as prof:
        for _ in range(args.steps):
            session.step()
        if cuda:
            torch.cuda.synchronize()
    print(f"{spec.name} {args.mode} batch {args.batch}, {args.layout}, {CONTEXT_PRECISION[args.precision]}, "
          f"{args.device}" + ("" if cuda else f", {args.threads} threads")
          + f": ms per step, self time, over {args.steps} steps")
    events = prof.key_averages(group_by_input_shape=args.shapes)
    if cuda:
        # The operators (CPU-side events) only: each kernel's time is already its operator's self CUDA time.
        events = [e for e in events if e.device_type == DeviceType.CPU]
        key, total = self_device_us, "CUDA"
    else:
        key, total = (lambda e: e.self_cpu_time_total), "CPU"
    print(f"total self {total} time of the operators: {sum(key(e) for e in events) / 1000 / args.steps:.2f} ms")
    for e in sorted(events, key=lambda e: -key(e)):
        if args.shapes and e.key not in SHAPE_OPS:
            continue
        ms = key(e) / 1000 / args.steps
        if ms < 0.05:
            continue
        where = f" {str(e.input_shapes[:2]):56s}" if args.shapes else ""
        cpu = f" cpu ms {e.self_cpu_time_total / 1000 / args.steps:9.2f}" if cuda else ""
        print(f"{e.key:40s}{where} calls {e.count / args.steps:5.1f} {'cuda ' if cuda else ''}ms {ms:9.2f}{cpu}")


if __name__ == "__main__":
    main()
