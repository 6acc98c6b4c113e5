#!/usr/bin/env python3
"""bench/ratio_table.py: issue 11's table from bench/interleave.py's JSON
files (or bench/merge_results.py's, or a results file of bench/compare.py
--out, which reads as one round): one Markdown row per network and batch, the ratio (Glassbox's images/s,
a language model's tokens/s, over PyTorch's better layout) in each mode, and
Glassbox's backward over its forward (from the medians: forward_backward's
step less forward's, over forward's), then every ratio under --below
(default 1.0), with each round's ratio so that a reader sees how far the
rounds agree. A ratio whose row was measured beside other work (the rounds'
loads: Note [Idle before and after] in interleave.py) reads "(busy)"; where
PyTorch also ran under torch.compile (names ending in /compiled), a second
table gives the ratios to its better layout compiled, and the list names
each listed row's. A row is busy past the lowest --busy-cpus of the
interleave.py commands that made the files (0.3 where none records one),
as the run itself marked it; where the rounds hold no reading of the
machine's load at all, a line under the table says so, since an unmarked
row is then not known to have run on a quiet machine.

Every benchmark either side measured is a row: one that only Glassbox or
only PyTorch measured (the other side's run failed) has no ratio, reads
"(only Glassbox)" or "(only PyTorch)", is named under the table, and is not
counted among the ratios. A ratio whose median is over another number of
rounds than most rows' (a benchmark pooled from several files, or a part
run with more --rounds) reads "(N rounds)", and the summary line says how
many such rows there are; a line under the list then counts every row over
its first rounds alone (the usual number), since more rounds given only to
the rows under 1.0 would lift the count. A ratio whose row Glassbox ran on other CPU
threads than the run's --threads in some round (bench_nets fits its threads
to the cores other work leaves free: the rounds' "threads", Note [Threads
on a shared machine] in tensor/machine_load.h) reads "(N threads)", N the
fewest it ran, since it compares unequal thread counts; the summary line
counts those too.

Several files may be given (a long run split into several commands, or
some networks run again after a change): a benchmark measured in more than
one takes its rounds from the last file given that has it. With
--pool-rounds it takes the rounds of every file that has it instead (two
one-round runs of the same build read as two rounds: say so only where
the code the benchmark runs is the same in both). A file that
interleave.py was still writing ("partial") counts with the rounds it has.
The table's first line names the builds the files record (Glassbox's commit,
PyTorch's version) and the machine they ran on (Note [One build per table]
in interleave.py), and says so where the files disagree: then it is not one
run's table. Files whose interleave.py commands ran with different settings
(--threads, --device, --precision, any option but those that choose the
networks, batches, modes, rounds, paths and the machine watch) or in
different environments are refused, exit status 1, naming the setting
(bench/merge_results.py's check): their rows do not make one table.

A benchmark whose name goes on after the batch (a precision, as
interleave.py --precision bf16 names it, LeNet/forward/batch:8/bf16; or
/real_data, /ranks:N) has a row of its own, the addition beside the
network: "LeNet (bf16)". A row in a mode without a column is named on
stderr, never dropped without a word. A file that is missing, empty, not
UTF-8, not JSON or not of interleave.py's shape (a benchmark not named
NET/MODE/batch:N[/...], a rate that is not a number above 0) stops the
table with one line naming it, exit status 1; so does a file given twice
with --pool-rounds, whose rounds would count twice.

--out FILE writes the Markdown to FILE instead of printing it, under a
line that names the command, so that a rerun regenerates it
(bench/results/<machine>/table.md from table.json). An --out that is one
of the inputs, a folder, or in a folder that does not exist is refused
before anything is read.

Standard library only.

Usage:
  python3 bench/ratio_table.py [--below 1.0] [--pool-rounds] [--out TABLE.md] RESULT.json [RESULT.json ...]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interleave import (BUILD_KEYS, DEFAULT_BUSY_CPUS, LAYOUT_SUFFIX, PEER_VARIANTS, benchmark_of,  # noqa: E402
                        benchmark_rates, options, rows_from_rounds, settings, threads_text, unwatched_note)
from results_io import (BadInput, check_benchmarks, check_one_table, check_output, check_rounds,  # noqa: E402
                        distinct_files, json_type, load_json, part_commands, write_text)

MODES = ["forward", "forward_backward", "train_step", "inference"]
MODE_HEADINGS = {"forward": "forward", "forward_backward": "fwd+bwd", "train_step": "train_step",
                 "inference": "inference"}


def is_comparison(data):
    """A results file of bench/compare.py --out: both sides' Google Benchmark runs."""
    return all(isinstance(data.get(side), dict) and isinstance(data[side].get("benchmarks"), list)
               for side in ("glassbox", "pytorch"))


def read(path):
    """An interleave.py or merge_results.py file as it is; a compare.py --out file
    as one round, with "builds" and "machine" from its two contexts. Either is
    checked (results_io.check_rounds); a file that is neither, or not whole,
    is a BadInput naming it and what is wrong."""
    data = load_json(path)
    if isinstance(data, dict) and "rounds" not in data and is_comparison(data):
        for side in ("glassbox", "pytorch"):
            check_benchmarks(f"{path} ({side} side)", data[side]["benchmarks"])
            context = data[side].get("context", {})
            if not isinstance(context, dict):
                raise BadInput(f"{path}: {side}.context is a JSON {json_type(context)}, not an object")
        contexts = {side: data[side].get("context", {}) for side in ("glassbox", "pytorch")}
        data = {"rounds": [{side: benchmark_rates(data[side]["benchmarks"]) for side in ("glassbox", "pytorch")}],
                "builds": {side: str(contexts[side].get(key, "unrecorded")) for side, key in BUILD_KEYS.items()},
                "machine": str(contexts["glassbox"].get("device_name", "unrecorded"))}
    return check_rounds(path, data)


def load_rounds(paths, pool=False):
    """The rounds of each benchmark from the last file that measured it (pool:
    from every file that did, in the order given), and the networks in the
    order first given. A benchmark's rounds keep every record a round holds
    of it: Glassbox's figure, the peer's in each layout and under
    torch.compile (PEER_VARIANTS), each one's load ("busy" marks) and the
    threads Glassbox ran where not --threads ("(N threads)" marks). A file
    measured a benchmark where Glassbox's side has it; one that only the
    peer measured (Glassbox's run failed) is kept the same way, after the rest,
    its network listed after the others. With pool, a file given twice is
    refused: its rounds would count twice."""
    if pool:
        distinct_files(paths)
    by_name, peer_only, nets = {}, {}, []  # benchmark name -> its rounds
    for path in paths:
        data_rounds = read(path)["rounds"]
        ours = dict.fromkeys(n for rnd in data_rounds for n in rnd["glassbox"])  # in order, once
        theirs = dict.fromkeys(benchmark_of(n) for rnd in data_rounds for n in rnd.get("pytorch", {}))
        for found, name in [(by_name, n) for n in ours] + [(peer_only, n) for n in theirs if n not in ours]:
            found[name] = found.get(name, []) + data_rounds if pool else data_rounds
            net = name.split("/")[0]
            if net not in nets and found is by_name:
                nets.append(net)
    by_name.update((name, found) for name, found in peer_only.items() if name not in by_name)
    nets += [net for net in dict.fromkeys(name.split("/")[0] for name in peer_only) if net not in nets]
    # One list of rounds holding each benchmark's own: round i of each merged.
    rounds = []
    for name, file_rounds in by_name.items():
        for i, rnd in enumerate(file_rounds):
            if i == len(rounds):
                rounds.append({"glassbox": {}, "pytorch": {}})
            for side, names in (("glassbox", [name]), ("pytorch", [name + v for v in PEER_VARIANTS])):
                loads = rnd.get("load", {}).get(side, {})
                threads = rnd.get("threads", {}).get(side, {})
                for n in names:
                    if n in rnd.get(side, {}):
                        rounds[i][side][n] = rnd[side][n]
                    if n in loads:
                        rounds[i].setdefault("load", {"glassbox": {}, "pytorch": {}})[side][n] = loads[n]
                    if n in threads:
                        rounds[i].setdefault("threads", {}).setdefault(side, {})[n] = threads[n]
    return rounds, nets


def one_table(paths):
    """Refuses files whose parts ran with different settings or in different
    environments (results_io.check_one_table: with several files, a 1-thread
    run's rows would replace a 2-thread run's without a word); returns the
    busy threshold, the lowest --busy-cpus of their parts, as
    bench/merge_results.py marks a merged file's rows."""
    checked, thresholds = [], []
    for path in paths:
        data = read(path)
        for where, command in part_commands(path, data):
            checked.append((where, settings(command), data.get("environment")))
            found = options(command)
            if found:
                thresholds.append(found["busy_cpus"])
    check_one_table(checked)
    return min(thresholds, default=DEFAULT_BUSY_CPUS)


def builds_line(paths):
    """What the files ran and where, from interleave.py's "builds" and "machine"
    (older files: unrecorded); one line, or the groups where the files differ."""
    builds, machines = {}, {}  # (Glassbox, PyTorch) or machine -> the files that ran them
    for path in paths:
        data = read(path)
        ran = data.get("builds") or {}
        key = (ran.get("glassbox", "unrecorded"), ran.get("pytorch", "unrecorded"))
        builds.setdefault(key, []).append(os.path.basename(path))
        machines.setdefault(data.get("machine") or "unrecorded", []).append(os.path.basename(path))
    parts = []
    if len(builds) == 1:
        (glassbox, pytorch), = builds
        parts.append(f"Glassbox {glassbox}, PyTorch {pytorch}")
    else:
        parts.append("NOT one build; " + "; ".join(f"Glassbox {g}, PyTorch {p}: {', '.join(files)}"
                                                   for (g, p), files in builds.items()))
    if len(machines) == 1:
        where, = machines
        parts.append(f"on {where}" if where != "unrecorded" else "machine unrecorded")
    else:
        parts.append("NOT one machine; " + "; ".join(f"{m}: {', '.join(files)}" for m, files in machines.items()))
    every = f" (all {len(paths)} files)" if len(paths) > 1 and len(builds) == len(machines) == 1 else ""
    return ", ".join(parts) + every


def round_ratios(rounds, name):
    """Each round's ratio for one benchmark (against that round's better layout)."""
    ratios = []
    for rnd in rounds:
        ours = rnd["glassbox"].get(name)
        theirs = [v for v in (rnd["pytorch"].get(name), rnd["pytorch"].get(name + LAYOUT_SUFFIX)) if v]
        if ours and theirs:
            ratios.append(ours / max(theirs))
    return ratios


def first_rounds(rounds, count):
    """Each name's first `count` measurements on each side, as rounds (round i holds each name's i-th): a round
    where a benchmark failed or was not run does not count among its first."""
    kept = [{"glassbox": {}, "pytorch": {}} for _ in range(count)]
    for side in ("glassbox", "pytorch"):
        seen = {}
        for rnd in rounds:
            for name, rate in rnd.get(side, {}).items():
                i = seen.get(name, 0)
                if i < count:
                    kept[i][side][name] = rate
                    seen[name] = i + 1
    return kept


def names_in_brief(names, most=6):
    """The first `most` names, then how many more."""
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", metavar="RESULT.json")
    parser.add_argument("--below", type=float, default=1.0, help="list every ratio under this (default 1.0)")
    parser.add_argument("--pool-rounds", action="store_true",
                        help="a benchmark in several files takes the rounds of all of them, not of the last")
    parser.add_argument("--out", metavar="TABLE.md", help="write the Markdown here instead of printing it")
    args = parser.parse_args()
    if args.out:
        check_output(args.out, "--out", args.files)
    busy_above = one_table(args.files)
    rounds, nets = load_rounds(args.files, pool=args.pool_rounds)
    rows = rows_from_rounds(rounds, nets, busy_above)
    paired = [row for row in rows if row["ratio"] is not None]
    # The rounds most ratios are medians of (at a tie, the fewest: every row over more is then marked); a row
    # over more (pooled, or a part run with more --rounds) or fewer says so in its cell, since its median weighs
    # more or fewer measurements.
    counts = [row["rounds"] for row in paired]
    usual = max(sorted(set(counts)), key=counts.count) if counts else 0

    # A row of the table per network, variant and batch: the variant is what
    # the name adds after the batch (a precision, /real_data, /ranks:N), shown
    # beside the network ("LeNet (bf16)"). A mode without a column is named.
    table, rates = {}, {}  # (net, variant, batch) -> {mode: row}, {mode: Glassbox's images/s}
    for row in rows:
        net, mode, batch, *variant = row["name"].split("/")
        if mode not in MODES:
            print(f"ratio_table.py: {row['name']}: not in the table: no column for mode '{mode}' "
                  f"({', '.join(MODES)})", file=sys.stderr)
            continue
        key = (net, "/".join(variant), int(batch.split(":")[1]))
        table.setdefault(key, {})[mode] = row
        rates.setdefault(key, {})[mode] = row["glassbox_images_per_s"]

    def backward_over_forward(key):
        forward, both = rates[key].get("forward"), rates[key].get("forward_backward")
        return f"{forward / both - 1:.2f}" if forward and both else ""

    def cell(row, field):
        """A ratio, marked "(busy)" where other work ran beside one of the row's measurements, "(N rounds)"
        where its median is over other than the usual number of rounds and "(N threads)" where Glassbox ran
        other than --threads in some round; "(only Glassbox)" or "(only PyTorch)" where one side has no figure."""
        if not row:
            return ""
        if not row.get(field):
            one_side = field == "ratio" and not (row["glassbox_images_per_s"] and row["pytorch_images_per_s"])
            return ("(only Glassbox)" if row["glassbox_images_per_s"] else "(only PyTorch)") if one_side else ""
        return (f"{row[field]:.2f}" + (" (busy)" if row.get("busy") else "")
                + (f" ({row['rounds']} rounds)" if row["rounds"] != usual else "")
                + (f" ({threads_text(row['glassbox_threads'])})" if row.get("glassbox_threads") else ""))

    def markdown(field, last=None):
        found = ["| network | batch | " + " | ".join(MODE_HEADINGS[m] for m in MODES)
                 + (" | bwd/fwd |" if last else " |"), "|---|---:|" + "---:|" * (len(MODES) + (1 if last else 0))]
        for key, cells in sorted(table.items(), key=lambda item: (nets.index(item[0][0]), item[0][1], item[0][2])):
            label = f"{key[0]} ({key[1]})" if key[1] else key[0]
            found.append(f"| {label} | {key[2]} | " + " | ".join(cell(cells.get(m), field) for m in MODES)
                         + (f" | {last(key)} |" if last else " |"))
        return found

    lines = [builds_line(args.files), ""] + markdown("ratio", backward_over_forward)
    if any(row.get("ratio_compiled") for row in rows):
        lines += ["", "Against PyTorch under torch.compile (the better of its layouts compiled):", ""]
        lines += markdown("ratio_compiled")
    busy_rows = sum(1 for row in rows if row.get("busy"))
    if busy_rows:
        lines.append(f"\n{busy_rows} of {len(rows)} rows measured beside other work, marked (busy) (Note [Idle before "
                     "and after] in bench/interleave.py): rerun them on a quiet machine before reading their ratios.")
    if unwatched_note(rows):
        lines.append("\n" + unwatched_note(rows))
    one_sided = [row for row in rows if row["ratio"] is None]
    if one_sided:
        lines.append(f"\n{len(one_sided)} of {len(rows)} rows have one side only, so no ratio: "
                     + "; ".join(f"only {who} measured {names_in_brief(names)}" for who, names in (
                         ("Glassbox", [r["name"] for r in one_sided if r["glassbox_images_per_s"]]),
                         ("PyTorch", [r["name"] for r in one_sided if not r["glassbox_images_per_s"]])) if names)
                     + ".")

    low = [row for row in paired if row["ratio"] < args.below]
    more, fewer = (sum(1 for n in counts if n > usual), sum(1 for n in counts if n < usual))
    rounds_said = ", ".join(part for part in (
        f"{more} of the {len(paired)} over more rounds than the usual {usual}" if more else "",
        (f"{fewer} over fewer" if more else f"{fewer} of the {len(paired)} over fewer rounds than the usual {usual}")
        if fewer else "") if part)
    # Note [Threads on a shared machine]: a ratio of Glassbox on fewer threads than PyTorch is not like for like.
    other_threads = sum(1 for row in paired if row.get("glassbox_threads"))
    said = "; ".join(part for part in (
        f"{rounds_said}, marked (N rounds)" if rounds_said else "",
        f"{other_threads} of the {len(paired)} with Glassbox on other CPU threads than --threads in some round, "
        "marked (N threads)" if other_threads else "") if part)
    lines.append(f"\n{len(low)} of {len(paired)} ratios under {args.below}"
                 + (f" ({said})" if said else "") + (":" if low else "."))
    for row in low:
        each = ", ".join(f"{r:.2f}" for r in round_ratios(rounds, row["name"]))
        compiled = f"; torch.compile {row['ratio_compiled']:.2f}" if row.get("ratio_compiled") else ""
        busy = f"; busy ({row['busiest_cpus']} CPUs of other work)" if row.get("busy") else ""
        if row.get("glassbox_threads"):
            busy += f"; Glassbox on {threads_text(row['glassbox_threads'])}"
        lines.append(f"- {row['name']}: {row['ratio']:.2f} (rounds: {each}; PyTorch {row['pytorch_layout']}"
                     f"{compiled}{busy})")
    if more:
        # What every row reads over its first rounds alone: more rounds given to the rows under 1.0 alone
        # would lift only those, and the count with them (docs/performance.md, "Rounds").
        first = [row for row in rows_from_rounds(first_rounds(rounds, usual), nets, busy_above)
                 if row["ratio"] is not None]
        first_low = sum(1 for row in first if row["ratio"] < args.below)
        spread = f" ({min(r['ratio'] for r in first):.2f} to {max(r['ratio'] for r in first):.2f})" if first else ""
        lines.append(f"\nOver each row's first {usual} rounds alone: {first_low} of {len(first)} ratios under "
                     f"{args.below}{spread}.")
    if not args.out:
        print("\n".join(lines))
        return
    command = " ".join(["python3", "bench/ratio_table.py"] + sys.argv[1:])
    write_text(args.out, f"<!-- Made by `{command}`; run it again to remake this file. -->\n\n"
               "Glassbox's images/s (a language model's: tokens/s) over PyTorch's better layout, the medians of "
               "the rounds; above 1.0 Glassbox is faster. bwd/fwd: Glassbox's backward over its forward."
               + (" (busy): other work ran beside one of the row's measurements." if busy_rows else "")
               + (f" (N rounds): the median of N rounds, where most rows have {usual}." if more or fewer else "")
               + (" (N threads): Glassbox ran N CPU threads in one of the row's rounds, not the run's --threads, "
                  "which PyTorch ran (bench_nets fits its threads to the cores other work leaves free; "
                  "interleave.py --glassbox-fixed-threads keeps them)." if other_threads else "")
               + "\n\n"
               + "\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    try:
        main()
    except BadInput as e:
        sys.exit(f"ratio_table.py: {e}")
