#!/usr/bin/env python3
"""bench/interleave.py: Glassbox against PyTorch, interleaved, so that both
sides see the same machine (load, clocks, thermal state) within minutes.

For each round, network, batch and mode: build/bench_nets runs that
benchmark, then bench/peers/pytorch_nets.py runs the same name (a language
model's peer is bench/peers/lstm_lm.py --time, which runs on the CPU in fp32
only: a language model with --device other than cpu or --precision other
than fp32 is refused before the run), the side that goes first
swapped every mode and every round. Note [Sides a mode apart]: when each
side ran all of a network's modes at once, the two measurements of one
benchmark were minutes apart; on a shared 2-core VM, where the same build's
images/s moved by 30% from minute to minute, one-round screens that way read
0.57 to 2.8 (--interleave network keeps that way, with fewer processes
started). Each side's images/s (a language model's tokens/s) per benchmark
is the median over the rounds; PyTorch's is the better of its layouts (NCHW and
channels_last, as bench/compare.py takes it). Prints one row per benchmark:
images/s of each, the ratio Glassbox / PyTorch (above 1: Glassbox is faster),
and which PyTorch layout won; --json writes the rows and every round (and,
while the run goes on, every round so far after each network and batch,
marked "partial": a run cut short keeps what it measured).

Note [Idle before and after]: a benchmark beside other work measures the
sharing, not the code (two OpenMP threads beside one busy process can run
several times slower than one thread). So before and after each side's
measurement the script sleeps --idle-check seconds and reads, from
/proc/stat, how many CPUs' worth of time the machine spent busy meanwhile:
work of other processes (and, on a VM, time the host took away, "steal").
A row where any of its measurements saw more than --busy-cpus of it is
marked "busy" in the table and in the JSON (rows[].busy, and each round's
"load"): rerun it on a quiet machine before reading its ratio. A line under
the table counts the rows with no reading (--idle-check 0, or a file from
before the check): an unmarked one is not known to have run on a quiet
machine.

On the CPU bench_nets fits its threads to the cores other work leaves free
when it starts, unless given --fixed-threads (--glassbox-fixed-threads here;
Note [Threads on a shared machine] in tensor/machine_load.h), and records
the threads it ran in its context ("cpu_threads"); the peer always runs
--threads. A benchmark Glassbox ran on other than --threads is recorded in
its round ("threads") and its row marked, with a line under the table
counting such rows: its ratio compares unequal thread counts.

Usage:
  python3 bench/interleave.py [--bench build/bench_nets]
      [--python PYTHON] [--device cpu] [--rounds 3]
      [--modes forward,forward_backward,train_step,inference] [--batch N[,N...]]
      [--threads 2] [--min-time S] [--warmup N] [--layouts nchw,channels_last] [--glassbox-layout L]
      [--interleave mode|network] [--glassbox-cuda-graph] [--glassbox-no-fusion] [--glassbox-fixed-threads]
      [--pytorch-compile] [--glassbox-autotune-cache FILE]
      [--glassbox-cudnn-api auto|legacy|graph] [--precision fp32|tf32|bf16|fp16] [--idle-check S] [--busy-cpus X] [--json PATH] NET ...

--batch takes one batch or several, each a number of samples or a multiple
of the network's default batch on that device, as bench_nets lists it
("0.5x", "1x", "4x"): `--batch 0.5x,1x,4x` times every network at half,
once and four times its default, the issue-11 table in one command.

--python is the Python that has PyTorch (the peer's): $GLASSBOX_PYTHON
where set, else python3.

On a GPU (--device cuda) bench_nets runs with --cudnn-search, since the peer
sets cudnn.benchmark (measured algorithm choice on both sides);
--glassbox-cudnn-api restricts its candidates to one of cuDNN's APIs.

The --json file: {"date", "command", "machine", "environment", "builds",
"rows", "rounds"} ("partial": true, and no "rows", while the run goes on);
"environment" holds the variables of RECORDED_ENVIRONMENT that were set,
those that cap the instruction set either side's kernels run
(ONEDNN_MAX_CPU_ISA=AVX2 for an AVX2 table on an AVX-512 machine). "rounds" holds one
{"glassbox": {name: images/s}, "pytorch": {name: images/s}, "load": {side:
{name: busy CPUs}}} per round, the peer's channels_last runs named name +
"/channels_last" and its torch.compile runs (--pytorch-compile) name +
["/channels_last"] + "/compiled"; a round where Glassbox ran a benchmark on
other CPU threads than --threads adds "threads": {"glassbox": {name: the
threads it ran}} (absent where every benchmark ran --threads, on a GPU, and
in older files); "rows" the medians (rows_from_rounds), one per benchmark
either side measured, each with the number of rounds that did (and
"glassbox_threads", the fewest threads its rounds record under "threads",
where they record any);
"failed_benchmarks" the peer's benchmarks that failed while the rest ran.
bench/merge_results.py merges several such files into one of the same shape,
every record of them kept; bench/ratio_table.py and bench/compare.py read them.

A side's Google Benchmark JSON with repetitions (--benchmark_repetitions)
gives a benchmark its mean aggregate, or the mean of its runs that did not
fail where there is none (benchmark_rates, as bench/compare.py reads it).
A --bench or --python that cannot be run, or a --json that is a folder or
lies in a missing one, stops the command before the first round.
"""

import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))
from peer_language_models import find_language_model  # noqa: E402  (after the path is set)
from peer_protocol import MODES  # noqa: E402
from results_io import (BadInput, check_benchmarks, check_output, check_programs, count, load_json,  # noqa: E402
                        number_from, positive_float, positive_int, run_program, write_json)
# Google Benchmark's suffixes after a benchmark's own name: its time type, and
# /iterations:N where a fixed step count was asked for (bench_nets --steps=N
# in older builds), in either order.
TIME_SUFFIX = re.compile(r"(/(manual_time|real_time|process_time|iterations:\d+))+$")
LAYOUT_SUFFIX = "/channels_last"
COMPILED_SUFFIX = "/compiled"  # the PyTorch peer's --compile (torch.compile, default mode)
# The peer's names for one benchmark: each layout, eager and under torch.compile.
PEER_VARIANTS = ("", LAYOUT_SUFFIX, COMPILED_SUFFIX, LAYOUT_SUFFIX + COMPILED_SUFFIX)
CUDA_GRAPH_SUFFIX = "/cuda_graph"  # bench_nets --cuda-graph
# Note [Idle before and after]: an idle 2-core VM reads 0 to 0.01 CPUs of
# other work; the same VM during a two-job build, 2.0.
DEFAULT_BUSY_CPUS = 0.3
# The longest --idle-check: a watch of minutes around each measurement is a mistyped flag, not a check.
MOST_IDLE_CHECK_S = 60.0


# What each side ran, as its JSON's context names it: Glassbox's commit (with
# "+uncommitted" where the tree had changes) and PyTorch's version. Note [One
# build per table]: a table split over several commands is one run only
# where every part ran the same code on the same machine; interleave.py
# stops if a side reports another build mid-run, and records the builds and
# the machine (machine() below) for ratio_table.py and merge_results.py.
BUILD_KEYS = {"glassbox": "commit", "pytorch": "torch"}


def machine():
    """The CPU both sides ran on, as /proc/cpuinfo names it, with its family and
    model (two machines that both call themselves "AMD EPYC" can be different
    generations) and the number of CPUs. Note [One build per table]: the
    machine a table's parts run on can change between them (a Zen 5 EPYC VM
    where the parts before ran on a Xeon), so each part says where it ran."""
    try:
        with open("/proc/cpuinfo") as f:
            fields = [line.split(":", 1) for line in f if ":" in line]
    except OSError:
        return "unrecorded"
    first = {}
    for key, value in fields:
        first.setdefault(key.strip(), value.strip())
    cpus = sum(1 for key, _ in fields if key.strip() == "processor")
    return (f"{first.get('model name', 'unknown CPU')} (family {first.get('cpu family', '?')}, "
            f"model {first.get('model', '?')}), {cpus} CPUs")


def busy_cpus(seconds):
    """How many CPUs' worth of time the machine spent busy over the next
    `seconds`, while this script sleeps (Note [Idle before and after]): from
    /proc/stat's first line, everything but idle and iowait, steal included.
    None where /proc/stat cannot be read or seconds is 0."""
    def sample():
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
        return sum(ticks), ticks[3] + ticks[4]
    if seconds <= 0:
        return None
    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    elapsed = total1 - total0
    return (os.cpu_count() or 1) * (elapsed - (idle1 - idle0)) / elapsed if elapsed > 0 else None


def measured_while_idle(measure, seconds):
    """measure()'s rates and the busier of the machine's two readings around it (None: not checked)."""
    before = busy_cpus(seconds)
    found = measure()
    after = busy_cpus(seconds)
    readings = [x for x in (before, after) if x is not None]
    return found, max(readings) if readings else None


def rates(path, side, builds):
    """{benchmark name: images/s, or a language model's tokens/s} from
    Google-Benchmark-shaped JSON; records the side's build in `builds` (or
    stops if it differs from the one recorded)."""
    return rates_and_context(path, side, builds)[0]


def rates_and_context(path, side, builds):
    """rates(), and the JSON's context (an object)."""
    data = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("context", {}), dict):
        raise BadInput(f"the {side} side wrote {path}, which is not Google Benchmark JSON")
    check_benchmarks(f"the {side} side's {path}", data.get("benchmarks"))
    build = data.get("context", {}).get(BUILD_KEYS[side], "unrecorded")
    if builds.setdefault(side, build) != build:
        sys.exit(f"interleave.py: the {side} side ran {build}, earlier in this run {builds[side]}: "
                 "one run's rounds must come from one build (was it rebuilt mid-run?)")
    return benchmark_rates(data["benchmarks"]), data.get("context", {})


def context_threads(context):
    """The CPU threads bench_nets ran, its context's "cpu_threads" ("2"); None where it records no whole number
    above 0."""
    text = context.get("cpu_threads")
    if isinstance(text, bool) or not isinstance(text, (str, int)) or not str(text).strip().isdigit():
        return None
    return int(str(text).strip()) or None


def benchmark_rates(benchmarks):
    """{benchmark name: images/s or tokens/s} of a Google-Benchmark-shaped list, as bench/compare.py reads
    it: with repetitions, the mean aggregate where there is one, otherwise the mean of the name's runs that
    did not fail (each repetition is a run of the same name, and every one counts)."""
    runs, means = {}, {}
    for r in benchmarks:
        rate = r.get("images/s", r.get("tokens/s"))
        if rate is None or r.get("error_occurred"):
            continue
        name = TIME_SUFFIX.sub("", r.get("run_name") or r["name"])
        if r.get("run_type") == "aggregate":
            if r.get("aggregate_name") == "mean":
                means[name] = rate
        else:
            runs.setdefault(name, []).append(rate)
    names = dict.fromkeys(list(runs) + list(means))
    return {name: means[name] if name in means else statistics.mean(runs[name]) for name in names}


# The variables that change which kernels either side runs, recorded with the results.
RECORDED_ENVIRONMENT = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS",
                        "MKL_DEBUG_CPU_TYPE", "OPENBLAS_CORETYPE", "NVIDIA_TF32_OVERRIDE")


def recorded_environment(environ):
    return {name: environ[name] for name in RECORDED_ENVIRONMENT if name in environ}


def recorded_command(argv):
    """The command line as the results keep it: an absolute path (the peer's
    Python in a virtual environment, a binary kept aside) by its last two
    parts, which name it without naming the machine's folders."""
    return [os.path.join(*arg.split(os.sep)[-2:]) if os.path.isabs(arg) else arg for arg in argv]


def run(command, env, out=None):
    """Runs one side's command; stops the run where it fails. With `out`, the
    JSON it writes: a peer that ran but had some benchmarks fail exits 1 with
    their rows marked (error_occurred), and the run goes on without them, each
    named on stderr and kept in the results (failed_benchmarks)."""
    done = run_program(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    if done.returncode == 1 and out and os.path.exists(out):
        written = load_json(out)
        failed = [r for r in written.get("benchmarks", []) if isinstance(r, dict) and r.get("error_occurred")] \
            if isinstance(written, dict) and isinstance(written.get("benchmarks", []), list) else []
        if failed:
            for r in failed:
                print(f"interleave.py: {r['name']} failed, the run goes on without it: {r.get('error_message', '?')}",
                      file=sys.stderr)
                FAILED_BENCHMARKS.append({"name": r["name"], "error_message": r.get("error_message", "")})
            return
    if done.returncode != 0:
        sys.exit(f"interleave.py: {' '.join(command)} failed ({done.returncode}):\n{done.stdout.decode(errors='replace')[-3000:]}")


# The peer's benchmarks that failed while the rest ran (run()), in the order they failed.
FAILED_BENCHMARKS = []


def failed_benchmarks():
    """The results' record of the peer's failed benchmarks: none where all ran."""
    return {"failed_benchmarks": FAILED_BENCHMARKS} if FAILED_BENCHMARKS else {}


def default_batch(args, net, env):
    """The network's default batch on args.device, from bench_nets' own list of its benchmarks."""
    done = run_program([args.bench, f"--device={args.device}", "--benchmark_list_tests=true",
                        f"--benchmark_filter=^{net}/"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    found = re.search(rf"^{re.escape(net)}/[a-z_]+/batch:(\d+)", done.stdout.decode(errors="replace"), re.M)
    if done.returncode != 0 or not found:
        sys.exit(f"interleave.py: no default batch for {net} in `{args.bench} --benchmark_list_tests` "
                 f"({done.returncode}):\n{done.stdout.decode(errors='replace')[-2000:]}")
    return int(found.group(1))


def batches_for(args, net, env):
    """The batches asked for, numbers as they are, multiples ("2x") of net's default; [None]: the default."""
    if not args.batch:
        return [None]
    batches = []
    for item in args.batch.split(","):
        if re.fullmatch(r"\d*\.?\d+x", item) and float(item[:-1]) > 0:
            batch = max(1, round(float(item[:-1]) * default_batch(args, net, env)))
        elif item.isdigit() and int(item) > 0:
            batch = int(item)
        else:
            sys.exit(f"interleave.py: --batch takes positive numbers or multiples such as 0.5x or 4x, got '{item}'")
        if batch not in batches:
            batches.append(batch)
    return batches


def glassbox(args, net, modes, batch, tmp, env, builds):
    """bench_nets' rates, and the CPU threads it ran where they are not --threads (None where they are, where its
    context records none, and off the CPU, where cpu_threads does not time the step)."""
    out = os.path.join(tmp, "g.json")
    command = [args.bench, f"--device={args.device}", f"--benchmark_filter=^{net}/({'|'.join(modes)})/",
               f"--benchmark_min_time={args.min_time}", f"--benchmark_out={out}"]
    if batch:
        command.append(f"--batch={batch}")
    if args.warmup is not None:
        command.append(f"--warmup={args.warmup}")
    if args.precision != "fp32":
        command.append(f"--precision={args.precision}")
    if args.glassbox_layout != "auto":
        command.append(f"--layout={args.glassbox_layout}")
    if args.device.startswith("cuda"):
        command.append("--cudnn-search")
        if args.glassbox_autotune_cache:
            command.append(f"--autotune-cache={args.glassbox_autotune_cache}")
    if args.glassbox_cuda_graph:
        command.append("--cuda-graph")
    if args.glassbox_no_fusion:
        command.append("--no-fusion")
    if args.glassbox_fixed_threads:
        command.append("--fixed-threads")
    if args.glassbox_cudnn_api != "auto":
        command.append(f"--cudnn-api={args.glassbox_cudnn_api}")
    run(command, env)
    found, context = rates_and_context(out, "glassbox", builds)
    # Note [Threads on a shared machine]: bench_nets may have run fewer threads than asked for.
    threads = context_threads(context) if args.device == "cpu" else None
    # Paired with PyTorch's eager steps of the same name: the run's command
    # line (in --json) says the steps were replayed.
    return ({name.replace(CUDA_GRAPH_SUFFIX, ""): rate for name, rate in found.items()},
            threads if threads != args.threads else None)


def pytorch(args, net, modes, batch, tmp, env, builds):
    """The peer's rates, and None: it runs --threads (glassbox()'s second value)."""
    out = os.path.join(tmp, "p.json")
    if os.path.exists(out):
        os.remove(out)  # the last call's JSON must not stand in for this one's
    if find_language_model(net):  # nn.LSTM's peer: bench/peers/lstm_lm.py
        command = [args.python, os.path.join(HERE, "peers", "lstm_lm.py"), "--time", ",".join(modes), "--net", net,
                   "--min-time", str(args.min_time), "--threads", str(args.threads), "--json", out]
        if args.warmup is not None:
            command += ["--warmup", str(args.warmup)]
        if batch:
            command += ["--batch", str(batch)]
        run(command, env, out)
        return rates(out, "pytorch", builds), None
    command = [args.python, os.path.join(HERE, "peers", "pytorch_nets.py"), "--device", args.device,
               "--filter", f"^{net}/({'|'.join(modes)})/", "--min-time", str(args.min_time),
               "--threads", str(args.threads), "--layouts", args.layouts, "--json", out, net]
    if args.warmup is not None:
        command += ["--warmup", str(args.warmup)]
    if batch:
        command += ["--batch", str(batch)]
    command += ["--precision", args.precision]
    if args.pytorch_compile:
        command.append("--compile")
    run(command, env, out)
    return rates(out, "pytorch", builds), None


def benchmark_of(peer_name):
    """The benchmark a peer's name belongs to: the name less torch.compile's suffix, then the layout's."""
    for suffix in (COMPILED_SUFFIX, LAYOUT_SUFFIX):
        if peer_name.endswith(suffix):
            peer_name = peer_name[:-len(suffix)]
    return peer_name


def rows_from_rounds(rounds, nets, busy_above=DEFAULT_BUSY_CPUS):
    """One row per benchmark in `rounds` that either side measured (the
    peer's names less their layout and torch.compile suffixes): each side's
    median over the rounds that measured it, PyTorch's better layout, and the
    ratio (None where one side has no figure: a benchmark that failed or was
    not run there is a row without a ratio, never left out); "rounds", how
    many rounds its ratio rests on (measured_rounds); ordered as `nets` lists the
    networks, then by mode, then by batch. Where PyTorch also ran under
    torch.compile (names ending in /compiled), the row adds its better layout
    compiled and the ratio to that. Where the rounds hold loads, a row is
    "busy" where any round saw more than busy_above CPUs of other work around
    one of its measurements (either side, either layout). Where a round
    records Glassbox's benchmark under "threads" (it ran other than
    --threads), "glassbox_threads" is the fewest threads so recorded."""
    def median(side, name):
        values = [rnd[side][name] for rnd in rounds if name in rnd[side]]
        return statistics.median(values) if values else None

    def order(name):
        net, mode, batch = (name.split("/") + ["", ""])[:3]
        size = int(batch.split(":")[1]) if batch.startswith("batch:") else 0
        return (nets.index(net) if net in nets else 99, mode, size, name)

    measured = ({n for rnd in rounds for n in rnd["glassbox"]}
                | {benchmark_of(n) for rnd in rounds for n in rnd["pytorch"]})
    rows = []
    for name in sorted(measured, key=order):
        ours = median("glassbox", name)
        peer_names = [name + variant for variant in PEER_VARIANTS]
        layouts = {"nchw": median("pytorch", name), "channels_last": median("pytorch", name + LAYOUT_SUFFIX)}
        best = max((v, k) for k, v in layouts.items() if v) if any(layouts.values()) else (None, "-")
        if find_language_model(name.split("/")[0]):
            best = (best[0], "time-major")  # nn.LSTM's one layout
        loads = [load for rnd in rounds for side, names in rnd.get("load", {}).items()
                 for n, load in names.items() if n in (name, name + LAYOUT_SUFFIX) and load is not None]
        row = {"name": name, "glassbox_images_per_s": ours, "pytorch_images_per_s": best[0],
               "pytorch_layout": best[1], "pytorch_by_layout": layouts,
               "ratio": ours / best[0] if ours and best[0] else None,
               "rounds": measured_rounds(sum(1 for rnd in rounds if name in rnd["glassbox"]),
                                         sum(1 for rnd in rounds if any(n in rnd["pytorch"] for n in peer_names)))}
        compiled = [v for v in (median("pytorch", name + COMPILED_SUFFIX),
                                median("pytorch", name + LAYOUT_SUFFIX + COMPILED_SUFFIX)) if v]
        if compiled:
            row["pytorch_compiled_images_per_s"] = max(compiled)
            row["ratio_compiled"] = ours / max(compiled) if ours else None
        if loads:
            row["busiest_cpus"] = round(max(loads), 2)
            row["busy"] = max(loads) > busy_above
        threads = [rnd["threads"]["glassbox"][name] for rnd in rounds
                   if name in rnd.get("threads", {}).get("glassbox", {})]
        if threads:
            row["glassbox_threads"] = min(threads)
        rows.append(row)
    return rows


def measured_rounds(ours, theirs):
    """The rounds a row's ratio rests on: the fewer of the two sides' counts of rounds that measured it (a side
    short of rounds has the weaker median), or the one side's count where only one side measured it."""
    return min(ours, theirs) if ours and theirs else max(ours, theirs)


def unwatched_note(rows):
    """A line where some rows hold no reading of the machine's load ("" where all do): an
    unmarked row is then not known to have run on a quiet machine (Note [Idle before and after])."""
    unwatched = sum(1 for row in rows if row.get("busiest_cpus") is None)
    if not unwatched:
        return ""
    which = "any row" if unwatched == len(rows) else f"{unwatched} of {len(rows)} rows"
    return (f"The machine's load was not recorded for {which} (no idle check ran around their measurements: "
            "--idle-check 0, a bench/compare.py file, or a run from before bench/interleave.py checked): an "
            "unmarked ratio is not known to come from a quiet machine.")


def threads_text(n):
    return f"{n} thread" + ("s" if n != 1 else "")


def other_threads_note(rows):
    """A line counting the rows where Glassbox ran other than --threads in some round ("" where none did)."""
    other = sum(1 for row in rows if row.get("glassbox_threads"))
    if not other:
        return ""
    return (f"{other} of {len(rows)} rows ran Glassbox on other CPU threads than the run's --threads in some round "
            "(bench_nets fits its threads to the cores other work leaves free; --glassbox-fixed-threads keeps them): "
            "their ratios compare unequal thread counts.")


def print_rows(rows, heading):
    """The rows as a text table under the heading's lines (bench/compare.py prints a file's this way)."""
    for line in heading:
        print(line)
    width = max([36] + [len(row["name"]) for row in rows])
    header = f"{'benchmark':{width}s} {'Glassbox':>10s} {'PyTorch':>10s} {'ratio':>6s}  PyTorch layout"
    print(header)
    print("-" * len(header))
    for row in rows:
        fmt = lambda v: f"{v:10.1f}" if v else f"{'-':>10s}"  # noqa: E731
        ratio = f"{row['ratio']:6.2f}" if row["ratio"] else f"{'-':>6s}"
        busy = f"  busy ({row['busiest_cpus']} CPUs of other work)" if row.get("busy") else ""
        if row.get("glassbox_threads"):
            busy += f"  Glassbox on {threads_text(row['glassbox_threads'])}"
        compiled = ""
        if row.get("pytorch_compiled_images_per_s"):
            versus = f"{row['ratio_compiled']:.2f}" if row.get("ratio_compiled") else "-"
            compiled = f"; torch.compile {row['pytorch_compiled_images_per_s']:.1f}, ratio {versus}"
        print(f"{row['name']:{width}s} {fmt(row['glassbox_images_per_s'])} {fmt(row['pytorch_images_per_s'])} {ratio}  "
              f"{row['pytorch_layout']}{compiled}{busy}")
    busy_rows = sum(1 for row in rows if row.get("busy"))
    if busy_rows:
        print(f"{busy_rows} row{'s' if busy_rows != 1 else ''} measured beside other work (Note [Idle before and "
              "after] in bench/interleave.py): rerun on a quiet machine before reading their ratios")
    if unwatched_note(rows):
        print(unwatched_note(rows))
    if other_threads_note(rows):
        print(other_threads_note(rows))


def argument_parser():
    """interleave.py's options (bench/merge_results.py reads its parts' commands with them)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("nets", nargs="+", metavar="NET")
    parser.add_argument("--bench", default="build/bench_nets")
    parser.add_argument("--python", default=os.environ.get("GLASSBOX_PYTHON") or "python3",
                        help="the Python with PyTorch (default: $GLASSBOX_PYTHON, else python3)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--modes", default="forward,forward_backward,train_step,inference")
    parser.add_argument("--batch", help="N, or several: 2,8 or 0.5x,1x,4x (multiples of each default)")
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--min-time", type=positive_float, default=2.0)
    parser.add_argument("--warmup", type=count, help="untimed steps of each mode on both sides (default: each "
                        "side's 10)")
    parser.add_argument("--layouts", default="nchw,channels_last", help="PyTorch's memory formats (its better one counts)")
    parser.add_argument("--glassbox-layout", choices=["auto", "nchw", "nhwc"], default="auto",
                        help="bench_nets --layout: where Glassbox stores values NHWC (default: its own choice)")
    parser.add_argument("--glassbox-cuda-graph", action="store_true",
                        help="bench_nets --cuda-graph: Glassbox's steps replayed as CUDA graphs (GPU only)")
    parser.add_argument("--glassbox-no-fusion", action="store_true",
                        help="bench_nets --no-fusion: every ReLU runs itself on Glassbox's side")
    parser.add_argument("--glassbox-fixed-threads", action="store_true",
                        help="bench_nets --fixed-threads: --threads even beside other work (by default bench_nets "
                             "runs one thread fewer per core of it; Note [Threads on a shared machine])")
    parser.add_argument("--glassbox-cudnn-api", choices=["auto", "legacy", "graph"], default="auto",
                        help="bench_nets --cudnn-api: whose convolution candidates Glassbox's GPU search times")
    parser.add_argument("--glassbox-autotune-cache", metavar="FILE",
                        help="bench_nets --autotune-cache: on a GPU, the measured cuDNN search of each convolution "
                             "is kept in FILE and reused by later rounds and runs (the same GPU and cuDNN)")
    parser.add_argument("--pytorch-compile", action="store_true",
                        help="also time PyTorch under torch.compile (default mode); rows add the ratio to it")
    parser.add_argument("--interleave", choices=["mode", "network"], default="mode",
                        help="take turns every mode (default) or every network and batch (all modes at once)")
    parser.add_argument("--precision", choices=["fp32", "tf32", "bf16", "fp16"], default="fp32")
    parser.add_argument("--idle-check", type=number_from(0.0, MOST_IDLE_CHECK_S), default=0.5, metavar="S",
                        help="seconds of watching the machine before and after each measurement, 0 to "
                             f"{MOST_IDLE_CHECK_S:g} (0: no check)")
    parser.add_argument("--busy-cpus", type=number_from(0.0), default=DEFAULT_BUSY_CPUS, metavar="X",
                        help="more than this many CPUs of other work around a measurement marks its row busy "
                             "(0 or more, fewer than the machine's CPUs)")
    parser.add_argument("--json", metavar="PATH")
    return parser


# interleave.py's options that choose what a run measures (networks,
# batches, modes, rounds), name its files and programs (the builds are
# checked apart), or watch the machine: runs that differ only in these
# make one table (bench/merge_results.py, bench/ratio_table.py), runs that
# differ in any other (settings()) do not.
NOT_SETTINGS = ("nets", "batch", "modes", "rounds", "json", "bench", "python", "glassbox_autotune_cache",
                "idle_check", "busy_cpus")


class Unreadable(Exception):
    pass


def options(command):
    """A recorded interleave.py command read with interleave.py's own options
    (defaults where it left them out); None where it is not interleave.py's."""
    if not isinstance(command, list) or not command or os.path.basename(str(command[0])) != "interleave.py":
        return None
    parser = argument_parser()

    def error(message):
        raise Unreadable(message)
    parser.error = error
    try:
        return vars(parser.parse_args([str(arg) for arg in command[1:]]))
    except (Unreadable, SystemExit):  # SystemExit: a recorded --help
        return None


def settings(command):
    """The settings a recorded command ran with: its options less NOT_SETTINGS (None: unreadable)."""
    found = options(command)
    return None if found is None else {k: v for k, v in found.items() if k not in NOT_SETTINGS}


def main():
    parser = argument_parser()
    args = parser.parse_args()
    # A mode list with no mode, or an empty item in it, measures nothing or not what was asked.
    modes = args.modes.split(",")
    if not all(m.strip() for m in modes):
        parser.error("--modes takes one mode or several, comma-separated, with none empty "
                     f"({','.join(MODES)}), got '{args.modes}'")
    # A misspelt mode matches no benchmark on either side: an hour of rounds would measure nothing of it.
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"--modes: no mode '{unknown[0]}'; the modes are {', '.join(MODES)}")
    # A language model's peer (bench/peers/lstm_lm.py) runs on the CPU in fp32 only: beside Glassbox on a GPU
    # or in another precision its figure would pair unlike with unlike.
    language_models = [net for net in args.nets if find_language_model(net)]
    if language_models and (args.device != "cpu" or args.precision != "fp32"):
        given = " and ".join(f"--{flag} {value}" for flag, value, plain in (
            ("device", args.device, "cpu"), ("precision", args.precision, "fp32")) if value != plain)
        parser.error(f"{', '.join(language_models)}: a language model's PyTorch side (bench/peers/lstm_lm.py) runs "
                     f"on the CPU in fp32 only, so with {given} its figure would not pair with Glassbox's; time the "
                     "language models in a run of their own with --device cpu --precision fp32")
    # Readings are at most the machine's CPUs: a threshold there or above would never mark a row busy.
    cpus = os.cpu_count() or 1
    if args.idle_check > 0 and args.busy_cpus >= cpus:
        parser.error(f"--busy-cpus {args.busy_cpus:g}: this machine has {cpus} CPUs, so no reading could exceed "
                     "it and no row would be marked busy (--idle-check 0 turns the check off)")
    # Before the run: a missing program or output folder found after an hour of measuring costs the hour.
    check_programs([("--bench", args.bench), ("--python", args.python)])
    if args.json:
        check_output(args.json, "--json")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))

    batches = {net: batches_for(args, net, env) for net in args.nets}
    rounds = []  # per round: {"glassbox": {...}, "pytorch": {...}, "load": {...}[, "threads": {...}]}
    builds = {}  # side -> what it ran (BUILD_KEYS)
    started = datetime.datetime.now().isoformat(timespec="seconds")
    where = machine()

    def save_partial():  # what is measured so far, so that a run cut short keeps it
        if args.json:
            write_json(args.json, {"date": started, "command": recorded_command(sys.argv), "partial": True,
                                   "environment": recorded_environment(os.environ),
                                   "machine": where, "builds": builds, "rounds": rounds, **failed_benchmarks()})

    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            found = {"glassbox": {}, "pytorch": {}, "load": {"glassbox": {}, "pytorch": {}}}
            rounds.append(found)
            for net in args.nets:
                for batch in batches[net]:
                    # Note [Sides a mode apart]: one mode at a time, the side that goes
                    # first swapped every mode and every round.
                    groups = [[m] for m in modes] if args.interleave == "mode" else [modes]
                    for g, group in enumerate(groups):
                        sides = [("glassbox", glassbox), ("pytorch", pytorch)]
                        for side, measure in (sides if (r + g) % 2 == 0 else sides[::-1]):
                            (measured, threads), load = measured_while_idle(
                                lambda: measure(args, net, group, batch, tmp, env, builds), args.idle_check)
                            found[side].update(measured)
                            found["load"][side].update({name: load for name in measured})
                            if threads is not None:
                                found.setdefault("threads", {}).setdefault(side, {}).update(
                                    dict.fromkeys(measured, threads))
                            # After each side: one side's figures stand when the
                            # other's run (a torch.compile, say) is cut short.
                            save_partial()
                    at = f" batch {batch}" if batch else ""
                    print(f"round {r + 1}/{args.rounds}: {net}{at} done", file=sys.stderr, flush=True)

    rows = rows_from_rounds(rounds, args.nets, args.busy_cpus)
    replayed = (", Glassbox's steps replayed as CUDA graphs" if args.glassbox_cuda_graph else "") + \
        (", Glassbox without fusion" if args.glassbox_no_fusion else "") + \
        (", Glassbox's threads fixed" if args.glassbox_fixed_threads else "") + \
        (f", Glassbox's cuDNN candidates: {args.glassbox_cudnn_api} API" if args.glassbox_cudnn_api != "auto" else "")
    print_rows(rows, [f"{args.device}, {args.precision}, {args.threads} threads, {args.rounds} interleaved rounds, "
                      f"medians; images/s (a language model's: tokens/s){replayed}",
                      f"Glassbox {builds.get('glassbox', '-')}, PyTorch {builds.get('pytorch', '-')}, on {where}"])
    if args.json:
        write_json(args.json, {"date": started, "command": recorded_command(sys.argv), "machine": where,
                               "environment": recorded_environment(os.environ), "builds": builds,
                               "rows": rows, "rounds": rounds, **failed_benchmarks()})


if __name__ == "__main__":
    try:
        main()
    except BadInput as e:
        sys.exit(f"interleave.py: {e}")
