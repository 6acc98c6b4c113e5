#!/usr/bin/env python3
"""bench/compare.py: Glassbox against a peer, benchmark by benchmark.

  python3 bench/compare.py GLASSBOX_JSON PYTORCH_JSON [--out RESULTS_JSON]

Both inputs are Google-Benchmark-shaped JSON ({"context", "benchmarks"}):
build/bench_nets --benchmark_out=F --benchmark_out_format=json, and
bench/peers/pytorch_nets.py --json F. Benchmarks are matched by name, with
Google Benchmark's time-type suffix (/manual_time, /real_time) removed, so
"VGG16/train_step/batch:64/manual_time" matches "VGG16/train_step/batch:64".
With repetitions, the mean aggregate is used where there is one. The peer
may time both memory layouts ("<name>" and "<name>/channels_last"): Glassbox
is compared with the faster of the two, and the note says which it was.

Prints one row per name: images/s of each, the ratio Glassbox / PyTorch
(above 1: Glassbox is faster), TFLOP/s of each. --out writes one results
file with both contexts, both benchmark lists and the rows.

Bad input (missing or malformed file) is one line on stderr, exit status 2;
no benchmark in common is exit status 1.
"""

import argparse
import datetime
import json
import os
import re
import sys

PROG = "compare.py"
SUFFIX = re.compile(r"/(manual_time|real_time|process_time)$")
LAYOUT_SUFFIX = "/channels_last"  # the peer's name for a run in torch.channels_last


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def load(path, what):
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise UsageError(f"cannot read {what} {path}: {e.strerror or e}")
    except json.JSONDecodeError as e:
        raise UsageError(f"{what} {path} is not JSON: {e}")
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise UsageError(f"{what} {path} is not Google Benchmark JSON (no \"benchmarks\" list)")
    if not isinstance(data.get("context", {}), dict):
        raise UsageError(f"{what} {path}: \"context\" is not an object")
    return data


def key(entry):
    name = entry.get("run_name") or entry.get("name") or ""
    return SUFFIX.sub("", name)


def by_name(benchmarks):
    """{normalised name: entry}: the mean aggregate where repetitions made one,
    otherwise the iteration run (the mean of the counters if several)."""
    iterations, means, order = {}, {}, []
    for entry in benchmarks:
        if not isinstance(entry, dict):
            continue
        name = key(entry)
        if name not in iterations and name not in means:
            order.append(name)
        if entry.get("run_type") == "aggregate":
            if entry.get("aggregate_name") == "mean":
                means[name] = entry
        else:
            iterations.setdefault(name, []).append(entry)
    result = {}
    for name in order:
        if name in means:
            result[name] = means[name]
        elif name in iterations:
            runs = iterations[name]
            if len(runs) == 1:
                result[name] = runs[0]
            else:
                good = [r for r in runs if not r.get("error_occurred")] or runs
                merged = dict(good[0])
                for field in ("images/s", "TFLOP/s", "peak_memory", "real_time", "cpu_time"):
                    values = [r[field] for r in good if isinstance(r.get(field), (int, float))]
                    if values:
                        merged[field] = sum(values) / len(values)
                result[name] = merged
    return result


def best_layout(pytorch, glassbox_names):
    """The peer's rows folded to one per Glassbox name: where it timed a name
    and name + /channels_last, the one with more images/s. Returns that and
    {name: {layout: images/s}} for the names timed in more than one layout
    or only in channels_last."""
    candidates = {}
    for name, entry in pytorch.items():
        base = name
        if name.endswith(LAYOUT_SUFFIX) and name not in glassbox_names:
            base = name[:-len(LAYOUT_SUFFIX)]
        candidates.setdefault(base, []).append(("channels_last" if base != name else "nchw", entry))
    folded, rates = {}, {}
    for base, options in candidates.items():
        measured = [(number(entry, "images/s"), layout, entry) for layout, entry in options]
        good = [m for m in measured if m[0] is not None]
        folded[base] = max(good, key=lambda m: m[0])[2] if good else options[0][1]
        if len(options) > 1 or options[0][0] != "nchw":
            rates[base] = {layout: rate for rate, layout, _ in measured}
    return folded, rates


def layout_note(layout_rates, chosen):
    """"PyTorch: channels_last (nchw 52.3 img/s)": which layout the row shows, and the other's rate."""
    if not layout_rates:
        return ""
    best = next(layout for layout, rate in layout_rates.items() if rate == chosen) if chosen else "none"
    others = ", ".join(f"{layout} {fmt(rate)} img/s" if rate is not None else f"{layout} failed"
                       for layout, rate in layout_rates.items() if layout != best)
    return f"PyTorch: {best}" + (f" ({others})" if others else "")


def number(entry, field):
    if entry is None or entry.get("error_occurred"):
        return None
    value = entry.get(field)
    return value if isinstance(value, (int, float)) else None


def fmt(value, digits=4):
    if value is None:
        return "-"
    return f"{value:.{digits}g}" if abs(value) < 1e5 else f"{value:.0f}"


def fmt_bytes(value):
    if not value:
        return "-"
    return f"{value / 2**20:.0f}"


def main(argv):
    parser = Parser(prog=PROG, description="Compare Glassbox with a peer (PyTorch), benchmark by benchmark.")
    parser.add_argument("glassbox", metavar="GLASSBOX_JSON")
    parser.add_argument("pytorch", metavar="PYTORCH_JSON")
    parser.add_argument("--out", metavar="RESULTS_JSON", help="write both runs and the comparison here")
    args = parser.parse_args(argv)

    glassbox = load(args.glassbox, "Glassbox results")
    pytorch = load(args.pytorch, "PyTorch results")
    gb = by_name(glassbox["benchmarks"])
    pt, pt_layouts = best_layout(by_name(pytorch["benchmarks"]), set(gb))
    names = list(gb) + [n for n in pt if n not in gb]

    gctx, pctx = glassbox.get("context", {}), pytorch.get("context", {})
    for field in ("device", "device_name", "precision"):
        if gctx.get(field) and pctx.get(field) and gctx[field] != pctx[field]:
            print(f"warning: {field} differs: Glassbox {gctx[field]!r}, PyTorch {pctx[field]!r}", file=sys.stderr)

    rows = []
    for name in names:
        g, p = gb.get(name), pt.get(name)
        g_rate, p_rate = number(g, "images/s"), number(p, "images/s")
        rows.append({
            "name": name,
            "glassbox_images_per_s": g_rate,
            "pytorch_images_per_s": p_rate,
            "ratio_glassbox_over_pytorch": g_rate / p_rate if g_rate and p_rate else None,
            "glassbox_tflops": number(g, "TFLOP/s"),
            "pytorch_tflops": number(p, "TFLOP/s"),
            "glassbox_peak_memory": number(g, "peak_memory"),
            "pytorch_peak_memory": number(p, "peak_memory"),
            "pytorch_images_per_s_by_layout": pt_layouts.get(name),
            "note": "; ".join(part for part in (
                "only in Glassbox" if p is None else "only in PyTorch" if g is None else "",
                *(f"{who} error: {e.get('error_message', '?')}" for who, e in (("Glassbox", g), ("PyTorch", p))
                  if e is not None and e.get("error_occurred")),
                layout_note(pt_layouts.get(name), p_rate)) if part),
        })

    print(f"Glassbox: {gctx.get('device_name', '?')} ({gctx.get('device', '?')}), commit {gctx.get('commit', '?')}, "
          f"{gctx.get('precision', '?')}")
    print(f"PyTorch:  {pctx.get('device_name', '?')} ({pctx.get('device', '?')}), torch {pctx.get('torch', '?')}, "
          f"{pctx.get('precision', '?')}")
    width = max([len("Benchmark")] + [len(r["name"]) for r in rows])
    header = (f"{'Benchmark':<{width}} {'Glassbox img/s':>14} {'PyTorch img/s':>14} {'ratio':>7} "
              f"{'Glassbox TFLOP/s':>16} {'PyTorch TFLOP/s':>15} {'GB MiB':>7} {'PT MiB':>7}  note")
    print("-" * len(header))
    print(header)
    print("-" * len(header))
    for r in rows:
        ratio = f"{r['ratio_glassbox_over_pytorch']:.2f}" if r["ratio_glassbox_over_pytorch"] else "-"
        print(f"{r['name']:<{width}} {fmt(r['glassbox_images_per_s']):>14} {fmt(r['pytorch_images_per_s']):>14} "
              f"{ratio:>7} {fmt(r['glassbox_tflops'], 3):>16} {fmt(r['pytorch_tflops'], 3):>15} "
              f"{fmt_bytes(r['glassbox_peak_memory']):>7} {fmt_bytes(r['pytorch_peak_memory']):>7}  {r['note']}".rstrip())
    print("ratio = Glassbox images/s / PyTorch images/s (above 1: Glassbox is faster); MiB = peak device memory")
    if pt_layouts:
        print("PyTorch timed more than one memory layout: each row shows its faster one (note)")

    if args.out:
        results = {
            "created": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "inputs": {"glassbox": os.path.abspath(args.glassbox), "pytorch": os.path.abspath(args.pytorch)},
            "comparison": rows,
            "glassbox": {"context": gctx, "benchmarks": glassbox["benchmarks"]},
            "pytorch": {"context": pctx, "benchmarks": pytorch["benchmarks"]},
        }
        try:
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            with open(args.out, "w") as f:
                json.dump(results, f, indent=2)
                f.write("\n")
        except OSError as e:
            raise UsageError(f"cannot write --out {args.out}: {e.strerror or e}")
        print(f"wrote {args.out}")

    if not any(r["glassbox_images_per_s"] is not None and r["pytorch_images_per_s"] is not None for r in rows):
        print(f"{PROG}: no benchmark measured by both (names: Glassbox {len(gb)}, PyTorch {len(pt)})",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        sys.exit(2)
