#!/usr/bin/env python3
"""bench/compare.py: Glassbox against a peer, benchmark by benchmark.

  python3 bench/compare.py GLASSBOX_JSON PYTORCH_JSON [--out RESULTS_JSON]
  python3 bench/compare.py RESULTS_JSON

With two files, both are Google-Benchmark-shaped JSON ({"context",
"benchmarks"}): build/bench_nets --benchmark_out=F --benchmark_out_format=json,
and bench/peers/pytorch_nets.py --json F. Benchmarks are matched by name, with
Google Benchmark's suffixes removed: the time type (/manual_time, /real_time)
and the /iterations:N of a fixed step count (older bench_nets --steps=N), so
"VGG16/train_step/batch:64/manual_time" and "VGG16/train_step/batch:64/iterations:20"
match "VGG16/train_step/batch:64". With repetitions, the mean aggregate is
used where there is one; otherwise the mean of a name's runs that did not
fail, the row's note saying how many failed. The peer
may time both memory layouts ("<name>" and "<name>/channels_last"): Glassbox
is compared with the faster of the two, and the note says which it was.
The peer's torch.compile runs (pytorch_nets.py --compile: "<name>/compiled",
"<name>/channels_last/compiled") are a second reference: each makes a line
of its own, "<name>/compiled", under Glassbox's row of "<name>", with
Glassbox's figures repeated and the ratio against the compiled model (the
faster of its layouts).

With one file, it prints that file as a table: a results file that --out
wrote (both sides' runs are in it, so the table is the one the two-file
command printed, e.g. bench/results/h100-80gb/table.json), a
bench/interleave.py or bench/merge_results.py file (its medians, as
interleave.py prints them, with a line where rows hold no reading of the
machine's load: an unmarked row is then not known to have run on a quiet
machine; and a mark and a line where Glassbox ran other CPU threads than
the run's --threads), or one side's Google Benchmark JSON alone.

Prints one row per name: images/s of each (a language model's tokens/s,
where it reports no images/s: the row's "unit" and its note say so), the
ratio Glassbox / PyTorch (above 1: Glassbox is faster), TFLOP/s of each.
--out writes one results file with both contexts, both benchmark lists and
the rows.

The two sides' precision must read the same; both write Glassbox's
spelling (tensor/context.cpp): "fp32 (TF32 off)", "tf32", "bf16 (mixed:
16-bit values, fp32 master weights and accumulation)" and "fp16 (mixed:
16-bit values, fp32 master weights and accumulation; a training step scales
the loss)". The peer's older spellings of fp32 and tf32 are read
as those. A device, precision or CPU thread count (Glassbox's cpu_threads,
the peer's torch_num_threads) that differs between the two sides is warned
about on stderr; unequal thread counts are also said under the table's
heading (and each side's count in it), since then the ratios do not compare
like with like. A warning leaves the exit status as it is.

Bad input is one line on stderr naming the file and the problem, exit
status 2: a file that is missing, empty, not UTF-8 or not JSON; a run whose
name is not a string, whose rate (images/s, tokens/s) is not a finite
number above 0, or whose other figures (TFLOP/s, peak_memory, times) are
not finite numbers of 0 or more (a boolean is not a number); a context
whose device, device_name, precision, commit or torch is not a string; an
interleave.py file whose rounds or rows are not as interleave.py writes
them; an --out that is one of the inputs or a folder. With two files, no
benchmark in common is exit status 1. Standard library only.
"""

import argparse
import datetime
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results_io  # noqa: E402  (after the path is set)

PROG = "compare.py"
# Google Benchmark's suffixes after a benchmark's own name: its time type, and
# /iterations:N where a fixed step count was asked for (bench_nets --steps=N
# in older builds), in either order.
SUFFIX = re.compile(r"(/(manual_time|real_time|process_time|iterations:\d+))+$")
LAYOUT_SUFFIX = "/channels_last"  # the peer's name for a run in torch.channels_last
COMPILED_SUFFIX = "/compiled"  # the peer's name for a run under torch.compile, after any layout suffix


# The peer's spellings of a precision before it wrote Glassbox's (bench/peers/peer_report.py).
PRECISION_SPELLINGS = {"fp32, TF32 off": "fp32 (TF32 off)", "tf32 (TF32 in cuDNN and matrix products)": "tf32"}


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def read_json(path, what):
    try:
        return results_io.load_json(path, f"{what} {path}")
    except results_io.BadInput as e:
        raise UsageError(str(e))


# The context's fields this script prints or compares: each a string where present.
CONTEXT_STRINGS = ("device", "device_name", "precision", "commit", "torch")


def load(path, what, data=None):
    if data is None:
        data = read_json(path, what)
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise UsageError(f"{what} {path} is not Google Benchmark JSON (no \"benchmarks\" list)")
    context = data.get("context", {})
    if not isinstance(context, dict):
        raise UsageError(f"{what} {path}: \"context\" is not an object")
    for field in CONTEXT_STRINGS:
        if context.get(field) is not None and not isinstance(context[field], str):
            raise UsageError(f"{what} {path}: context.{field} is {results_io.shown(context[field])}, not a string")
    try:
        results_io.check_benchmarks(f"{what} {path}", data["benchmarks"])
    except results_io.BadInput as e:
        raise UsageError(str(e))
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
                for field in ("images/s", "tokens/s", "TFLOP/s", "peak_memory", "real_time", "cpu_time"):
                    values = [r[field] for r in good if isinstance(r.get(field), (int, float))]
                    if values:
                        merged[field] = sum(values) / len(values)
                failed = [r for r in runs if r.get("error_occurred")]
                if failed and len(failed) < len(runs):  # the mean is of the others: said in the row's note
                    merged["failed_runs"] = {"failed": len(failed), "of": len(runs),
                                                    "error_message": failed[0].get("error_message", "?")}
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
        measured = [(rate(entry)[0], layout, entry) for layout, entry in options]
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
    """The entry's figure; load() has refused one that is not a finite number (a boolean is not one)."""
    if entry is None or entry.get("error_occurred"):
        return None
    value = entry.get(field)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def rate(entry):
    """(the entry's images/s, "images/s"), or a language model's (tokens/s, "tokens/s") where
    it reports no images/s; (None, None) where it has neither."""
    for unit in ("images/s", "tokens/s"):
        if number(entry, unit) is not None:
            return number(entry, unit), unit
    return None, None


def failed_runs_note(who, entry):
    """"Glassbox: 1 of 3 runs failed (...), the mean is of the others", where some of a name's runs did."""
    failed = (entry or {}).get("failed_runs")
    if not failed:
        return ""
    return (f"{who}: {failed['failed']} of {failed['of']} runs failed ({failed['error_message']}), "
            "the mean is of the others")


def fmt(value, digits=4):
    if value is None:
        return "-"
    return f"{value:.{digits}g}" if abs(value) < 1e5 else f"{value:.0f}"


def fmt_bytes(value):
    if not value:
        return "-"
    return f"{value / 2**20:.0f}"


def precision(context):
    """The context's precision in Glassbox's spelling (PRECISION_SPELLINGS)."""
    value = context.get("precision")
    return PRECISION_SPELLINGS.get(value, value)


def same(field, glassbox, pytorch):
    """Whether two contexts' field names one thing: "cuda" is device 0 ("cuda:0"), and
    Glassbox's device_name adds the GPU's details in brackets ("... (sm_90, 132 SMs)")."""
    if field == "device":
        return glassbox.replace("cuda:0", "cuda") == pytorch.replace("cuda:0", "cuda")
    if field == "device_name":
        return glassbox == pytorch or glassbox.startswith(pytorch + " (") or pytorch.startswith(glassbox + " (")
    return glassbox == pytorch


def threads(context, field):
    """The context's CPU thread count (Glassbox's cpu_threads, the peer's torch_num_threads), or None."""
    try:
        return int(str(context.get(field)).strip())
    except ValueError:
        return None


def thread_count(n):
    """", 2 threads" for a header line ("" where unrecorded)."""
    return "" if n is None else f", {n} thread" + ("s" if n != 1 else "")


def thread_note(gctx, pctx):
    """Where the two sides ran different numbers of CPU threads, a line that says so ("" otherwise)."""
    g, p = threads(gctx, "cpu_threads"), threads(pctx, "torch_num_threads")
    if g is None or p is None or g == p:
        return ""
    return (f"warning: thread counts differ: Glassbox {g} (cpu_threads), PyTorch {p} (torch_num_threads); "
            "the ratios compare unequal thread counts")


def split_compiled(pytorch, glassbox_names):
    """The peer's rows in two: eager, and torch.compile's with /compiled removed
    (a name Glassbox itself has stays eager)."""
    eager, compiled = {}, {}
    for name, entry in pytorch.items():
        if name.endswith(COMPILED_SUFFIX) and name not in glassbox_names:
            compiled[name[:-len(COMPILED_SUFFIX)]] = entry
        else:
            eager[name] = entry
    return eager, compiled


def comparison_row(name, g, p, p_layouts, compiled=False):
    """One name's row. A language model reports tokens/s, not images/s: its
    rates stand in the images/s columns, with "unit" (and the note) saying so;
    two sides in different units have no ratio."""
    (g_rate, g_unit), (p_rate, p_unit) = rate(g), rate(p)
    units_differ = bool(g_unit and p_unit and g_unit != p_unit)
    unit = g_unit or p_unit or "images/s"
    return {
        "name": name + COMPILED_SUFFIX if compiled else name,
        "unit": unit,
        "glassbox_images_per_s": g_rate,
        "pytorch_images_per_s": p_rate,
        "ratio_glassbox_over_pytorch": g_rate / p_rate if g_rate and p_rate and not units_differ else None,
        "glassbox_tflops": number(g, "TFLOP/s"),
        "pytorch_tflops": number(p, "TFLOP/s"),
        "glassbox_peak_memory": number(g, "peak_memory"),
        "pytorch_peak_memory": number(p, "peak_memory"),
        "pytorch_images_per_s_by_layout": p_layouts,
        "pytorch_compiled": compiled,
        "note": "; ".join(part for part in (
            "only in Glassbox" if p is None else "only in PyTorch" if g is None else "",
            f"Glassbox in {g_unit}, PyTorch in {p_unit}: no ratio" if units_differ
            else "tokens/s" if unit == "tokens/s" else "",
            *(f"{who} error: {e.get('error_message', '?')}" for who, e in (("Glassbox", g), ("PyTorch", p))
              if e is not None and e.get("error_occurred")),
            *(failed_runs_note(who, e) for who, e in (("Glassbox", g), ("PyTorch", p))),
            layout_note(p_layouts, p_rate)) if part),
    }


def comparison_rows(glassbox, pytorch):
    """Both sides' runs folded to one row per benchmark name (what --out keeps
    as "comparison"), each followed by a row for the peer's torch.compile run
    of that name where it has one."""
    gb = by_name(glassbox["benchmarks"])
    eager, compiled = split_compiled(by_name(pytorch["benchmarks"]), set(gb))
    pt, pt_layouts = best_layout(eager, set(gb))
    ptc, ptc_layouts = best_layout(compiled, set(gb))
    rows = []
    for name in list(gb) + [n for n in pt if n not in gb] + [n for n in ptc if n not in gb and n not in pt]:
        g = gb.get(name)
        if name in gb or name in pt:
            rows.append(comparison_row(name, g, pt.get(name), pt_layouts.get(name)))
        if name in ptc:
            rows.append(comparison_row(name, g, ptc[name], ptc_layouts.get(name), compiled=True))
    return rows, len(gb), len(pt) + len(ptc), bool(pt_layouts or ptc_layouts)


def print_comparison(rows, gctx, pctx, any_layouts):
    for field in ("device", "device_name", "precision"):
        g, p = (precision(gctx), precision(pctx)) if field == "precision" else (gctx.get(field), pctx.get(field))
        if g and p and not same(field, g, p):
            print(f"warning: {field} differs: Glassbox {g!r}, PyTorch {p!r}", file=sys.stderr)
    unequal_threads = thread_note(gctx, pctx)
    if unequal_threads:  # on stderr as the others, and in the table, which is what gets kept
        print(unequal_threads, file=sys.stderr)
    g_threads, p_threads = threads(gctx, "cpu_threads"), threads(pctx, "torch_num_threads")
    print(f"Glassbox: {gctx.get('device_name', '?')} ({gctx.get('device', '?')}), commit {gctx.get('commit', '?')}, "
          f"{precision(gctx) or '?'}" + thread_count(g_threads))
    print(f"PyTorch:  {pctx.get('device_name', '?')} ({pctx.get('device', '?')}), torch {pctx.get('torch', '?')}, "
          f"{precision(pctx) or '?'}" + thread_count(p_threads))
    if unequal_threads:
        print(unequal_threads)
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
    if any(r.get("unit") == "tokens/s" for r in rows):
        print("rows noted tokens/s: a language model's tokens/s in the img/s columns, and their ratio")
    if any(r.get("pytorch_compiled") for r in rows):
        print(f"rows ending in {COMPILED_SUFFIX}: PyTorch under torch.compile, against Glassbox's row of the name "
              f"without {COMPILED_SUFFIX}")
    if any_layouts:
        print("PyTorch timed more than one memory layout: each row shows its faster one (note)")


def print_interleaved(path, data):
    """A bench/interleave.py (or bench/merge_results.py) file: its rows, as interleave.py prints them."""
    # interleave.py's reading of its own files (PyTorch's peers not needed).
    from interleave import DEFAULT_BUSY_CPUS, PEER_VARIANTS, options, print_rows, rows_from_rounds  # noqa: E402
    try:
        results_io.check_rounds(path, data)
        if data.get("rows"):
            results_io.check_rows(path, data["rows"], needed=("name", "glassbox_images_per_s", "pytorch_images_per_s",
                                                              "ratio", "pytorch_layout"))
        # A run cut short ("partial") has its rounds only: its rows are made here, busy past its --busy-cpus.
        commands = [] if data.get("rows") else [command for _, command in results_io.part_commands(path, data)]
    except results_io.BadInput as e:
        raise UsageError(str(e))
    rounds = data["rounds"]
    rows = data.get("rows")
    if not rows:
        nets = list(dict.fromkeys(n.split("/")[0] for rnd in rounds for n in rnd.get("glassbox", {})))
        thresholds = [found["busy_cpus"] for found in map(options, commands) if found]
        rows = rows_from_rounds(rounds, nets, min(thresholds, default=DEFAULT_BUSY_CPUS))
    builds = data.get("builds", {})
    counts = {n: sum(1 for rnd in rounds if n in rnd.get("glassbox", {})
                     or any(n + v in rnd.get("pytorch", {}) for v in PEER_VARIANTS)) for n in (r["name"] for r in rows)}
    low, high = min(counts.values(), default=0), max(counts.values(), default=0)
    print_rows(rows, [
        (f"{high} interleaved rounds" if low == high else f"{low} to {high} interleaved rounds a benchmark")
        + ", medians" + (" (partial: a run cut short)" if data.get("partial") else "")
        + "; images/s (a language model's: tokens/s)",
        f"Glassbox {builds.get('glassbox', 'unrecorded')}, PyTorch {builds.get('pytorch', 'unrecorded')}, "
        f"on {data.get('machine', 'an unrecorded machine')}"])


def print_one(path):
    """One file as a table (see the module's docstring); returns the exit status."""
    data = read_json(path, "results")
    if isinstance(data, dict) and isinstance(data.get("glassbox"), dict) and isinstance(data.get("pytorch"), dict):
        glassbox = load(path, "Glassbox side of", data["glassbox"])
        pytorch = load(path, "PyTorch side of", data["pytorch"])
        rows, _, _, any_layouts = comparison_rows(glassbox, pytorch)
        print_comparison(rows, glassbox.get("context", {}), pytorch.get("context", {}), any_layouts)
        return 0
    if isinstance(data, dict) and isinstance(data.get("rounds"), list) and \
            all(isinstance(r, dict) and "glassbox" in r for r in data["rounds"]):
        print_interleaved(path, data)
        return 0
    side = load(path, "results", data)
    ctx = side.get("context", {})
    rows = by_name(side["benchmarks"])
    who = "PyTorch" if "torch" in ctx else "Glassbox"
    print(f"{who}: {ctx.get('device_name', '?')} ({ctx.get('device', '?')}), "
          + (f"torch {ctx.get('torch', '?')}" if who == "PyTorch" else f"commit {ctx.get('commit', '?')}")
          + f", {precision(ctx) or '?'}"
          + thread_count(threads(ctx, "torch_num_threads" if who == "PyTorch" else "cpu_threads")))
    width = max([len("Benchmark")] + [len(n) for n in rows])
    header = f"{'Benchmark':<{width}} {'images/s':>12} {'TFLOP/s':>9} {'MiB':>7}  note"
    print("-" * len(header))
    print(header)
    print("-" * len(header))
    for name, entry in rows.items():
        value, unit = rate(entry)
        note = "; ".join(part for part in (
            f"error: {entry.get('error_message', '?')}" if entry.get("error_occurred") else "",
            "tokens/s" if unit == "tokens/s" else "", failed_runs_note(who, entry)) if part)
        print(f"{name:<{width}} {fmt(value):>12} {fmt(number(entry, 'TFLOP/s'), 3):>9} "
              f"{fmt_bytes(number(entry, 'peak_memory')):>7}  {note}".rstrip())
    return 0


def main(argv):
    parser = Parser(prog=PROG, description="Compare Glassbox with a peer (PyTorch), benchmark by benchmark; "
                    "or print one results file as a table.")
    parser.add_argument("glassbox", metavar="GLASSBOX_JSON|RESULTS_JSON")
    parser.add_argument("pytorch", metavar="PYTORCH_JSON", nargs="?")
    parser.add_argument("--out", metavar="RESULTS_JSON", help="write both runs and the comparison here")
    args = parser.parse_args(argv)
    if args.pytorch is None:
        if args.out:
            raise UsageError("--out needs two files (GLASSBOX_JSON PYTORCH_JSON)")
        return print_one(args.glassbox)
    if args.out:
        try:
            results_io.check_output(args.out, "--out", (args.glassbox, args.pytorch), make_folder=True)
        except results_io.BadInput as e:
            raise UsageError(str(e))

    glassbox = load(args.glassbox, "Glassbox results")
    pytorch = load(args.pytorch, "PyTorch results")
    rows, n_gb, n_pt, any_layouts = comparison_rows(glassbox, pytorch)
    gctx, pctx = glassbox.get("context", {}), pytorch.get("context", {})
    print_comparison(rows, gctx, pctx, any_layouts)

    if args.out:
        results = {
            "created": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "inputs": {"glassbox": args.glassbox, "pytorch": args.pytorch},
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
        print(f"{PROG}: no benchmark measured by both (names: Glassbox {n_gb}, PyTorch {n_pt})",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        sys.exit(2)
