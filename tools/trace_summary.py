#!/usr/bin/env python3
"""tools/trace_summary.py: a `glassbox trace` file as Markdown tables.

    python3 tools/trace_summary.py vgg16.trace.json [--top 10]

Prints what was traced, the time per pass (forward, backward-data,
backward-weights, backward, optimizer) with its share of the spans, each
layer's passes in graph order, and the longest spans. docs/one-step.md was
made with it. Standard library only.
"""
import argparse
import json
import sys
from collections import OrderedDict

PASSES = ["forward", "backward-data", "backward-weights", "backward", "optimizer"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--top", type=int, default=10, help="how many of the longest spans to list")
    args = parser.parse_args()
    try:
        with open(args.trace) as f:
            doc = json.load(f)
        other = doc["otherData"]
        spans = [e for e in doc["traceEvents"] if e.get("ph") == "X" and "layer" in e.get("args", {})]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"trace_summary.py: {args.trace}: not a glassbox trace ({e})")

    total = sum(e["dur"] for e in spans) / 1e3
    print(f"{other['network']}, batch {other['batch']}, on {other['device']} ({other['device_name']}): "
          f"one train step of {other['step_ms']:.1f} ms; its spans cover {total:.1f} ms\n")
    print("| pass | ms | share |\n|---|---:|---:|")
    for p in PASSES:
        ms = sum(e["dur"] for e in spans if e["args"]["pass"] == p) / 1e3
        if ms > 0:
            print(f"| {p} | {ms:.1f} | {100 * ms / total:.1f}% |")

    layers = OrderedDict()
    for e in spans:
        a = e["args"]
        row = layers.setdefault(a["layer"], {"type": a.get("type", "SGD"), "gflop": 0.0})
        row[a["pass"]] = row.get(a["pass"], 0.0) + e["dur"] / 1e3
        row["gflop"] += a.get("flops", 0.0) / 1e9
    print("\n| layer | type | forward ms | backward-data ms | backward-weights ms | backward ms | GFLOP (all passes) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, row in layers.items():
        cells = [f"{row[p]:.2f}" if p in row else "" for p in ["forward", "backward-data", "backward-weights"]]
        whole = row.get("backward", row.get("optimizer"))
        cells.append(f"{whole:.2f}" if whole is not None else "")
        print(f"| {name} | {row['type']} | " + " | ".join(cells) + f" | {row['gflop']:.2f} |")

    print(f"\nThe {args.top} longest spans:\n\n| span | ms | share |\n|---|---:|---:|")
    for e in sorted(spans, key=lambda e: -e["dur"])[: args.top]:
        print(f"| {e['name']} | {e['dur'] / 1e3:.2f} | {100 * e['dur'] / 1e3 / total:.1f}% |")


if __name__ == "__main__":
    main()
