#!/usr/bin/env python3
"""tools/kernels_summary.py: a `glassbox kernels --json` file as Markdown tables.

    python3 tools/kernels_summary.py resnet50.kernels.json [--top 12] [--layers REGEX] [--out FILE]

Prints what was recorded; the step's GPU time per pass and per layer type;
the kernels that fused layers run (a batch norm that applies its ReLU and
residual add), named; the kernel families; the longest kernels over the whole
step; with --layers, every kernel of the layers whose names match, pass by
pass in step order; and the records launched outside every span. Shares are
of the step's GPU time (docs/kernels.md). Prints to stdout, or with --out
writes FILE whole (a temporary file renamed into place); an --out that is
the input file itself is refused before anything is read or written.
Standard library only.
"""
import argparse
import json
import math
import os
import re
import sys
from collections import OrderedDict

PASSES = ["forward", "backward-data", "backward-weights", "backward", "optimizer"]


def ms(value):
    return f"{value:.3f}"


def percent(part, whole):
    return f"{100 * part / whole:.1f}%" if whole > 0 else "-"


def table(header, rows, right=()):
    """A Markdown table; columns whose index is in `right` align right."""
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


class BadFile(Exception):
    """What is wrong with the file, naming the field by its path (spans[2].kernels[0].count)."""


def json_type(value):
    """The JSON name of a value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {dict: "object", list: "array", str: "string"}.get(type(value), "number")


def is_number(value):
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


# What each value must be: a check and its words.
KINDS = {
    "string": (lambda v: isinstance(v, str), "a string"),
    "number": (is_number, "a number"),
    "count": (lambda v: is_number(v) and v >= 0 and v == int(v), "a whole number, 0 or more"),
    "batch": (lambda v: is_number(v) and v >= 1 and v == int(v), "a whole number, 1 or more"),
    "time": (lambda v: is_number(v) and v >= 0, "a number, 0 or more"),
    # A span's pass is one of the five a step has (tensor/pass.h); another would fall out of the per-pass table.
    "pass": (lambda v: isinstance(v, str) and v in PASSES, "one of " + ", ".join(PASSES)),
    "array": (lambda v: isinstance(v, list), "an array"),
    "object": (lambda v: isinstance(v, dict), "an object"),
}

# The fields this script reads (tools/cli/kernels_json.h has them all): name,
# kind, and whether the file must have it. An optional field may be absent or null.
TOP = [("network", "string", True), ("batch", "batch", True), ("device", "string", True),
       ("device_name", "string", False), ("runtime", "object", False), ("records", "count", False),
       ("gpu_ms", "time", True), ("attributed_ms", "time", False), ("unattributed_ms", "time", False),
       ("coverage", "number", True), ("dropped_records", "count", False), ("spans", "array", True),
       ("families", "array", True), ("unattributed", "array", True)]
SPAN = [("layer", "string", True), ("type", "string", False), ("pass", "pass", True),
        ("fused_into", "string", False), ("runs", "array", False), ("gpu_ms", "time", True),
        ("count", "count", True), ("kernels", "array", True)]
KERNEL = [("name", "string", True), ("family", "string", False), ("count", "count", True),
          ("gpu_ms", "time", True)]
FAMILY = [("family", "string", True), ("count", "count", True), ("gpu_ms", "time", True)]


def check(value, path, kind):
    ok, words = KINDS[kind]
    if not ok(value):
        text = json.dumps(value)
        text = text if len(text) <= 40 else text[:37] + "..."
        raise BadFile(f"field {path} must be {words}, got " + ("null" if value is None else f"{json_type(value)} {text}"))
    return value


def check_fields(obj, path, fields):
    """Checks obj's fields; drops an optional field that is null, so that
    .get(key, default) gives the default."""
    check(obj, path or "the top level", "object")
    prefix = path + "." if path else ""
    for key, kind, required in fields:
        if obj.get(key) is None:
            if required and key not in obj:
                raise BadFile(f"no field {prefix}{key}")
            if required:
                check(None, prefix + key, kind)
            obj.pop(key, None)
            continue
        check(obj[key], prefix + key, kind)


def load(path):
    """The file as a dict, every field the tables read checked; a file that is
    not one exits with a line naming the file and the field."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if not isinstance(doc, dict):
            raise BadFile(f"the top level is a JSON {json_type(doc)}, not an object")
        if doc.get("kind") != "glassbox.kernels":
            raise BadFile(f"its kind is {doc.get('kind')!r}, not 'glassbox.kernels'")
        check_fields(doc, "", TOP)
        if doc.get("runtime", {}).get("precision") is not None:
            check(doc["runtime"]["precision"], "runtime.precision", "string")
        for i, span in enumerate(doc["spans"]):
            check_fields(span, f"spans[{i}]", SPAN)
            for j, run in enumerate(span.get("runs", [])):
                check(run, f"spans[{i}].runs[{j}]", "string")
            for j, k in enumerate(span["kernels"]):
                check_fields(k, f"spans[{i}].kernels[{j}]", KERNEL)
        for i, family in enumerate(doc["families"]):
            check_fields(family, f"families[{i}]", FAMILY)
        for i, k in enumerate(doc["unattributed"]):
            check_fields(k, f"unattributed[{i}]", KERNEL)
        return doc
    except OSError as e:
        sys.exit(f"kernels_summary.py: {path}: cannot read it ({e.strerror or e})")
    except (ValueError, BadFile) as e:  # ValueError: not JSON, or not UTF-8
        sys.exit(f"kernels_summary.py: {path}: not a `glassbox kernels --json` file ({e})")


def header(doc):
    runtime = doc.get("runtime", {})
    precision = runtime.get("precision", "")
    what = f"{doc['network']}, batch {int(doc['batch'])}" + (f", {precision}" if precision else "")
    return (f"{what}, on {doc['device']} ({doc.get('device_name', '')}): {doc.get('records', 0)} records "
            f"(kernels, copies, sets), {ms(doc['gpu_ms'])} ms of GPU time, {percent(doc.get('attributed_ms', 0), doc['gpu_ms'])} "
            f"of it in a layer's pass or the optimizer\n")


def per_pass(doc):
    rows = []
    for p in PASSES:
        spans = [s for s in doc["spans"] if s["pass"] == p]
        if spans:
            gpu = sum(s["gpu_ms"] for s in spans)
            rows.append([p, sum(s["count"] for s in spans), ms(gpu), percent(gpu, doc["gpu_ms"])])
    outside = doc.get("unattributed_ms", 0.0)
    if doc["unattributed"]:
        rows.append(["outside every span", sum(k["count"] for k in doc["unattributed"]), ms(outside),
                     percent(outside, doc["gpu_ms"])])
    return table(["pass", "kernels", "GPU ms", "share"], rows, right=(1, 2, 3))


def types_of(doc):
    return {s["layer"]: s.get("type", "") for s in doc["spans"]}


def per_type(doc):
    """GPU time per layer type and pass, most first; where a type's pass is
    run by another layer, the `runs in` column says by which types."""
    types = types_of(doc)
    groups = OrderedDict()
    for s in doc["spans"]:
        g = groups.setdefault((s.get("type", "") or "?", s["pass"]),
                              {"layers": 0, "kernels": 0, "gpu": 0.0, "hosts": OrderedDict()})
        g["layers"] += 1
        g["kernels"] += s["count"]
        g["gpu"] += s["gpu_ms"]
        host = s.get("fused_into", "")
        if host:
            host_type = types.get(host, "") or host
            g["hosts"][host_type] = g["hosts"].get(host_type, 0) + 1
    rows = []
    for (kind, p), g in sorted(groups.items(), key=lambda item: -item[1]["gpu"]):
        runs_in = ", ".join(f"{n} in {t}" for t, n in g["hosts"].items())
        rows.append([kind, p, g["layers"], g["kernels"], ms(g["gpu"]), percent(g["gpu"], doc["gpu_ms"]), runs_in])
    return table(["layer type", "pass", "layers", "kernels", "GPU ms", "share", "runs in"], rows,
                 right=(2, 3, 4, 5))


def fused(doc):
    """The kernels of each pass that runs other layers' passes too, by what it
    fuses: "BatchNorm2d forward + Add + ReLU"."""
    types = types_of(doc)
    groups = OrderedDict()
    for s in doc["spans"]:
        runs = s.get("runs", [])
        if not runs:
            continue
        what = " + ".join([f"{s.get('type', '') or s['layer']} {s['pass']}"] + [types.get(r, "") or r for r in runs])
        g = groups.setdefault(what, {"layers": 0, "kernels": OrderedDict()})
        g["layers"] += 1
        for k in s["kernels"]:
            entry = g["kernels"].setdefault(kernel_key(k), [k["name"], k.get("family", ""), 0, 0.0])
            entry[2] += k["count"]
            entry[3] += k["gpu_ms"]
    if not groups:
        return "No layer runs another's pass: nothing is fused in this step.\n"
    rows = []
    for what, g in groups.items():
        first = True
        for name, family, count, gpu in g["kernels"].values():
            rows.append([what if first else "", g["layers"] if first else "", f"`{name}`", family, count, ms(gpu),
                         percent(gpu, doc["gpu_ms"])])
            first = False
        if first:
            rows.append([what, g["layers"], "(no kernels)", "", 0, ms(0.0), ""])
    return table(["fused pass", "layers", "kernel", "family", "count", "GPU ms", "share"], rows,
                 right=(1, 4, 5, 6))


def kernel_key(kernel):
    """One kernel across spans: its uncapped short name ("kernel") where the
    file has it (two short names can be one within the 60-character cut),
    else its short name."""
    return kernel.get("kernel", kernel["name"])


def families(doc):
    rows = [[f["family"], f["count"], ms(f["gpu_ms"]), percent(f["gpu_ms"], doc["gpu_ms"])] for f in doc["families"]]
    return table(["family", "kernels", "GPU ms", "share"], rows, right=(1, 2, 3))


def longest(doc, top):
    """The kernels with the most GPU time over the step, by short name, with
    the layer types and passes that launched them."""
    kernels = OrderedDict()
    for s in doc["spans"]:
        for k in s["kernels"]:
            entry = kernels.setdefault(kernel_key(k), {"name": k["name"], "family": k.get("family", ""), "count": 0,
                                                       "gpu": 0.0, "by": OrderedDict()})
            entry["count"] += k["count"]
            entry["gpu"] += k["gpu_ms"]
            entry["by"][f"{s.get('type', '') or s['layer']} {s['pass']}"] = True
    rows = []
    for e in sorted(kernels.values(), key=lambda e: -e["gpu"])[:top]:
        rows.append([f"`{e['name']}`", e["family"], e["count"], ms(e["gpu"]), percent(e["gpu"], doc["gpu_ms"]),
                     ", ".join(e["by"])])
    return table(["kernel", "family", "count", "GPU ms", "share", "launched by"], rows, right=(2, 3, 4))


def layers(doc, pattern):
    """Every kernel of the matching layers' passes, in step order."""
    rows = []
    for s in doc["spans"]:
        if not pattern.search(s["layer"]):
            continue
        cells = [s["layer"], s.get("type", ""), s["pass"]]
        if not s["kernels"]:
            host = s.get("fused_into", "")
            rows.append(cells + [f"(run by {host})" if host else "(no kernels)", "", 0, ms(0.0), ""])
            continue
        for k in s["kernels"]:
            rows.append(cells + [f"`{k['name']}`", k.get("family", ""), k["count"], ms(k["gpu_ms"]),
                                 percent(k["gpu_ms"], doc["gpu_ms"])])
            cells = ["", "", ""]
    if not rows:
        return f"No layer's name matches {pattern.pattern!r}.\n"
    return table(["layer", "type", "pass", "kernel", "family", "count", "GPU ms", "share"], rows, right=(5, 6, 7))


def unattributed(doc):
    if not doc["unattributed"]:
        return "Every record was launched inside a layer's pass or the optimizer.\n"
    rows = [[f"`{k['name']}`", k.get("family", ""), k["count"], ms(k["gpu_ms"]), percent(k["gpu_ms"], doc["gpu_ms"])]
            for k in doc["unattributed"]]
    return table(["kernel", "family", "count", "GPU ms", "share"], rows, right=(2, 3, 4))


def same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", help="the file `glassbox kernels NET --json FILE` wrote")
    parser.add_argument("--top", type=int, default=12, help="how many of the longest kernels to list (default 12)")
    parser.add_argument("--layers", metavar="REGEX",
                        help="also list every kernel of the layers whose names match (e.g. '^layer2\\.0\\.')")
    parser.add_argument("--out", metavar="FILE", help="write the tables to FILE instead of stdout")
    args = parser.parse_args()
    if args.top < 0:
        parser.error(f"--top must be 0 or more, got {args.top}")
    pattern = None
    if args.layers is not None:
        try:
            pattern = re.compile(args.layers)
        except re.error as e:
            parser.error(f"--layers {args.layers!r} is not a regular expression: {e}")
    if args.out is not None and same_file(args.out, args.kernels):
        sys.exit(f"kernels_summary.py: --out {args.out} is the input file: writing it would overwrite the input")
    doc = load(args.kernels)

    parts = [header(doc)]
    if doc.get("dropped_records", 0):
        parts.append(f"CUPTI dropped {doc['dropped_records']} records for want of buffer space: the totals miss them.\n")
    sections = [("GPU time per pass", per_pass(doc)), ("Per layer type", per_type(doc)),
                ("Fused passes and their kernels", fused(doc)), ("Kernel families", families(doc)),
                ("Longest kernels", longest(doc, args.top))]
    if pattern is not None:
        sections.append((f"Every kernel of the layers matching `{args.layers}`", layers(doc, pattern)))
    sections.append(("Outside every span", unattributed(doc)))
    parts += [f"### {title}\n\n{body}" for title, body in sections]
    text = "\n".join(parts)
    if args.out is None:
        sys.stdout.write(text)
        return
    partial = args.out + ".part"
    try:
        with open(partial, "w") as f:
            f.write(text)
        os.replace(partial, args.out)
    except OSError as e:
        if os.path.exists(partial):
            os.remove(partial)
        sys.exit(f"kernels_summary.py: cannot write {args.out}: {e}")


if __name__ == "__main__":
    try:
        main()
        sys.stdout.flush()  # a closed pipe shows here, not in Python's flush at exit
    except BrokenPipeError:
        # The reader closed stdout (`| head`): one line and exit 1, as Glassbox's programs do
        # (tools/entry_point.h); stdout goes to /dev/null so that the flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit("kernels_summary.py: standard output is incomplete: writing it failed (broken pipe)")
