#!/usr/bin/env python3
"""tools/trace_summary.py: a `glassbox trace` file as Markdown tables.

    python3 tools/trace_summary.py vgg16.trace.json [--top 10]

Prints what was traced, the time per pass (forward, backward-data,
backward-weights, backward, optimizer) with its share of the spans, each
layer's passes in graph order, and the longest spans. docs/one-step.md was
made with it. Standard library only.

The spans are read as `glassbox report` reads them (tools/cli/report_data.cpp,
docs/report.md): the complete events ("ph": "X") with args.layer, except a
GPU's kernels, copies and sets ("cat": "kernel", "memcpy", "memset"), which
name the span they ran in and would count twice; they get a line of their
own. If the trace holds several steps (counted by its optimizer spans), the
times are the mean per step. A file that is not such a trace is an error
naming the file and the field, exit code 1.
"""
import argparse
import json
import math
import os
import sys
from collections import OrderedDict

PASSES = ["forward", "backward-data", "backward-weights", "backward", "optimizer"]
DEVICE_RECORDS = ("kernel", "memcpy", "memset")  # tools/cli/trace_kernels.cpp


class BadTrace(Exception):
    """What is wrong with the file, naming the field."""


def json_type(value):
    """The JSON name of a value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {dict: "object", list: "array", str: "string"}.get(type(value), "number")


def describe(value):
    if value is None:
        return "null"
    text = json.dumps(value)
    return f"{json_type(value)} {text if len(text) <= 40 else text[:37] + '...'}"


def number(value, path, least=None):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadTrace(f"field {path} must be a number, got {describe(value)}")
    if least is not None and value < least:
        raise BadTrace(f"field {path} must be {least} or more, got {value}")
    return value


def whole(value, path):
    """A count of things (the batch): a whole number, 1 or more."""
    if number(value, path) < 1 or value != int(value):
        raise BadTrace(f"field {path} must be a whole number, 1 or more, got {value}")
    return int(value)


def text(value, path):
    if not isinstance(value, str):
        raise BadTrace(f"field {path} must be a string, got {describe(value)}")
    return value


def field(obj, key, path):
    if key not in obj or obj[key] is None:
        raise BadTrace(f"field {path}.{key} is missing" if path else f"field {key} is missing")
    return obj[key]


def read_trace(doc):
    """The header, the layer spans (event, layer, pass) in file order, the
    number of steps, and the GPU records' counts and total ms."""
    if not isinstance(doc, dict):
        raise BadTrace(f"the top level is a JSON {json_type(doc)}, not an object with traceEvents and otherData: "
                       "a Chrome trace may be a bare array, but `glassbox trace` writes an object")
    other = field(doc, "otherData", "")
    if not isinstance(other, dict):
        raise BadTrace(f"field otherData must be an object, got {describe(other)}")
    header = {key: text(field(other, key, "otherData"), f"otherData.{key}")
              for key in ("network", "device", "device_name")}
    header["batch"] = whole(field(other, "batch", "otherData"), "otherData.batch")
    header["step_ms"] = number(field(other, "step_ms", "otherData"), "otherData.step_ms", least=0)
    events = field(doc, "traceEvents", "")
    if not isinstance(events, list):
        raise BadTrace(f"field traceEvents must be an array, got {describe(events)}")
    spans, records = [], {"kernel": [0, 0.0], "copy": [0, 0.0]}
    for i, e in enumerate(events):
        path = f"traceEvents[{i}]"
        if not isinstance(e, dict):
            raise BadTrace(f"field {path} must be an object, got {describe(e)}")
        if e.get("ph") != "X":
            continue
        category = e.get("cat", "")
        if category is None:
            category = ""
        text(category, f"{path}.cat")
        if category in DEVICE_RECORDS:
            r = records["kernel" if category == "kernel" else "copy"]
            r[0] += 1
            r[1] += number(field(e, "dur", path), f"{path}.dur", least=0) / 1e3
            continue
        args = e.get("args")
        if args is None:
            continue
        if not isinstance(args, dict):
            raise BadTrace(f"field {path}.args must be an object, got {describe(args)}")
        if args.get("layer") is None:
            continue
        layer = text(args["layer"], f"{path}.args.layer")
        pass_path = f"{path}.args.pass" if args.get("pass") is not None or not category else f"{path}.cat"
        pass_ = text(args["pass"], pass_path) if args.get("pass") is not None else category
        kind = text(args["type"], f"{path}.args.type") if args.get("type") is not None else "SGD"
        flops = number(args["flops"], f"{path}.args.flops", least=0) if args.get("flops") is not None else 0.0
        ms = number(field(e, "dur", path), f"{path}.dur", least=0) / 1e3
        # A span's pass is one of the five a step has (docs/tracing.md); another would fall out of the tables.
        if not pass_:
            field(args, "pass", f"{path}.args")  # neither args.pass nor cat names it
        if pass_ not in PASSES:
            raise BadTrace(f"field {pass_path} must be one of {', '.join(PASSES)}, got {describe(pass_)}")
        name = text(e["name"], f"{path}.name") if e.get("name") is not None else f"{layer} {pass_}"
        spans.append({"name": name, "layer": layer, "pass": pass_, "type": kind, "flops": flops, "ms": ms})
    steps = max(1, sum(1 for s in spans if s["pass"] == "optimizer"))
    return header, spans, steps, records


def share(part, whole):
    return f"{100 * part / whole:.1f}%" if whole > 0 else "-"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--top", type=int, default=10, help="how many of the longest spans to list")
    args = parser.parse_args()
    if args.top < 0:
        parser.error(f"--top must be 0 or more, got {args.top}")
    try:
        with open(args.trace, encoding="utf-8") as f:
            doc = json.load(f)
        other, spans, steps, records = read_trace(doc)
    except OSError as e:
        sys.exit(f"trace_summary.py: {args.trace}: cannot read it ({e.strerror or e})")
    except (ValueError, BadTrace) as e:  # ValueError: not JSON, or not UTF-8
        sys.exit(f"trace_summary.py: {args.trace}: not a glassbox trace ({e})")

    total = sum(s["ms"] for s in spans) / steps
    mean = f"\nThe trace holds {steps} steps (optimizer spans): times below are the mean per step." if steps > 1 else ""
    print(f"{other['network']}, batch {other['batch']}, on {other['device']} ({other['device_name']}): "
          f"one train step of {other['step_ms']:.1f} ms; its spans cover {total:.1f} ms{mean}")
    for what, (count, ms) in (("kernels", records["kernel"]), ("copies and sets", records["copy"])):
        if count:
            print(f"GPU {what}: {count} records, {ms / steps:.3f} ms per step (device time, not added to the spans)")
    print()
    print("| pass | ms | share |\n|---|---:|---:|")
    for p in PASSES:
        ms = sum(s["ms"] for s in spans if s["pass"] == p) / steps
        if ms > 0:
            print(f"| {p} | {ms:.1f} | {share(ms, total)} |")

    layers = OrderedDict()
    for s in spans:
        row = layers.setdefault(s["layer"], {"type": s["type"], "gflop": 0.0})
        row[s["pass"]] = row.get(s["pass"], 0.0) + s["ms"] / steps
        row["gflop"] += s["flops"] / 1e9 / steps
    print("\n| layer | type | forward ms | backward-data ms | backward-weights ms | backward ms | GFLOP (all passes) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, row in layers.items():
        cells = [f"{row[p]:.2f}" if p in row else "" for p in ["forward", "backward-data", "backward-weights"]]
        whole = row.get("backward", row.get("optimizer"))
        cells.append(f"{whole:.2f}" if whole is not None else "")
        print(f"| {name} | {row['type']} | " + " | ".join(cells) + f" | {row['gflop']:.2f} |")

    of = f" (of all {steps} steps; each one's share of a step's spans)" if steps > 1 else ""
    print(f"\nThe {args.top} longest spans{of}:\n\n| span | ms | share |\n|---|---:|---:|")
    for s in sorted(spans, key=lambda s: -s["ms"])[: args.top]:
        print(f"| {s['name']} | {s['ms']:.2f} | {share(s['ms'], total)} |")


if __name__ == "__main__":
    try:
        main()
        sys.stdout.flush()  # a closed pipe shows here, not in Python's flush at exit
    except BrokenPipeError:
        # The reader closed stdout (`| head`): one line and exit 1, as Glassbox's programs do
        # (tools/entry_point.h); stdout goes to /dev/null so that the flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit("trace_summary.py: standard output is incomplete: writing it failed (broken pipe)")
