#!/usr/bin/env python3
"""bench/torch_profile.py: where PyTorch's time goes in one benchmark network,
by operator, to set beside `glassbox time NET --batch N --device cpu`.

Builds the network as bench/peers/peer_models.py does for bench_nets' peer,
runs three untimed steps, then STEPS steps under torch.profiler, and prints
each operator's self time per step; with --shapes, the convolutions and max
poolings split by input shape.

Usage (with a Python that has PyTorch, as the peer uses):
  python3 bench/torch_profile.py NET BATCH {forward,forward_backward}
      [--layout channels_last|nchw] [--steps 3] [--threads 2] [--shapes]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
from peer_models import build_for_timing, find_net  # noqa: E402  (after the path is set)

SHAPE_OPS = ("aten::mkldnn_convolution", "aten::convolution_backward", "aten::max_pool2d_with_indices")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("net")
    parser.add_argument("batch", type=int)
    parser.add_argument("mode", choices=["forward", "forward_backward"])
    parser.add_argument("--layout", choices=["channels_last", "nchw"], default="channels_last")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--shapes", action="store_true", help="convolutions and max poolings by input shape")
    args = parser.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(args.threads)
    spec = find_net(args.net)
    fmt = torch.channels_last if args.layout == "channels_last" else torch.contiguous_format
    model = build_for_timing(spec).to(memory_format=fmt)
    x = torch.randn((args.batch,) + tuple(spec.sample)).to(memory_format=fmt)
    labels = torch.randint(0, spec.classes, (args.batch,))
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        if args.mode == "forward":
            model(x)
            return
        model.zero_grad(set_to_none=True)
        loss_fn(model(x), labels).backward()

    for _ in range(3):
        step()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=args.shapes) as prof:
        for _ in range(args.steps):
            step()
    print(f"{args.net} {args.mode} batch {args.batch}, {args.layout}, {args.threads} threads: "
          f"ms per step, self time, over {args.steps} steps")
    events = prof.key_averages(group_by_input_shape=args.shapes)
    for e in sorted(events, key=lambda e: -e.self_cpu_time_total):
        if args.shapes and e.key not in SHAPE_OPS:
            continue
        ms = e.self_cpu_time_total / 1000 / args.steps
        if ms < 0.05:
            continue
        where = f" {str(e.input_shapes[:2]):56s}" if args.shapes else ""
        print(f"{e.key:40s}{where} calls {e.count / args.steps:5.1f} ms {ms:9.2f}")


if __name__ == "__main__":
    main()
