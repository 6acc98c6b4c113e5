#!/usr/bin/env python3
"""tests/test_bench_tools.py: the benchmark scripts under bench/ on hand-made
files and stand-in programs, no torch and no build needed.

    python3 tests/test_bench_tools.py

- Repetitions: a benchmark's rate is its mean aggregate, or the mean of its
  runs, never its last repetition alone (interleave.benchmark_rates, which
  bench/ratio_table.py reads a compare.py --out file with).
- A name that goes on after the batch (a precision: .../batch:8/bf16) keeps
  its row in ratio_table.py and batch_scaling.py; a row in a mode without a
  column is named on stderr.
- An output that is one of the inputs, a folder, or in a missing folder is
  refused before anything is written (and, for the long runs, before the
  run: a stand-in program that leaves a mark shows it never ran).
- A rate that is NaN, infinite, negative, 0, a boolean or a string is
  refused, naming the file and the benchmark; so is a peer's GEMM rate.
- Bad files (missing, empty, not UTF-8, the wrong shape, a benchmark not
  named NET/MODE/batch:N) are one line naming the file, not a traceback;
  so are a missing program, a missing folder and a bad regular expression.
- Counts (--rounds, --threads, --steps, a batch) of 0 or less are refused
  when the options are read; so are training logs without epochs, with an
  epoch of 0 seconds or a null test accuracy.
- thread_scaling.py reads --threads=N, a merged file's parts, and names the
  benchmarks only one file has; a file or job given twice is refused where
  it would count twice; data_vs_pytorch.py names what it leaves out.
- ratio_table.py marks a row busy past the run's own --busy-cpus (a merged
  file's parts'; compare.py too, where it makes a partial file's rows);
  makes a row of every benchmark either side measured, naming those with
  one side only and counting only ratios; refuses files run with other
  settings or in other environments (batch_scaling.py too); marks a ratio
  over more rounds than the rest; and says where no load was recorded.
- interleave.py refuses a language model on a GPU or outside fp32 (its peer
  runs on the CPU in fp32 only) before anything runs.
- A benchmark bench_nets ran on fewer CPU threads than --threads (its
  context's cpu_threads, fitted to other work) is marked in interleave.py's
  table, compare.py's and ratio_table.py's ("(N threads)"), and the mark
  survives merge_results.py; one run on --threads is not marked.
- Each stored table.json still makes its table.md.
"""

import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)

import interleave  # noqa: E402  (after the path is set)
import results_io  # noqa: E402
import train_vs_pytorch  # noqa: E402


def script(name):
    return os.path.join(BENCH, name)


def run(name, *args, env=None, cwd=None):
    """(exit status, stdout, stderr) of a bench/ script."""
    done = subprocess.run([sys.executable, script(name), *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=60)
    return done.returncode, done.stdout, done.stderr


def google_benchmark(entries, torch=False):
    context = {"device": "cpu", "precision": "fp32 (TF32 off)"}
    context.update({"torch": "2.x", "torch_num_threads": 2} if torch else {"commit": "abc", "cpu_threads": "2"})
    return {"context": context, "benchmarks": entries}


def entry(name, rate, **more):
    return {"name": name, "run_name": name, "run_type": "iteration", "iterations": 3, "real_time": 10.0,
            "time_unit": "ms", "images/s": rate, **more}


def interleaved(rounds, command=("LeNet",), **more):
    """An interleave.py --json file's contents."""
    nets = list(dict.fromkeys(n.split("/")[0] for rnd in rounds for n in rnd["glassbox"]))
    return {"date": "2026-01-01T00:00:00", "command": ["bench/interleave.py", *command], "machine": "M",
            "environment": {}, "builds": {"glassbox": "abc", "pytorch": "2.x"}, "rounds": rounds,
            "rows": interleave.rows_from_rounds(rounds, nets), **more}


class Folder(unittest.TestCase):
    """A temporary folder per test; write() puts a file in it, program() a stand-in program."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.dir = self.tmp.name
        self.mark = os.path.join(self.dir, "ran")

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, data):
        path = self.path(name)
        with open(path, "wb" if isinstance(data, bytes) else "w") as f:
            if isinstance(data, (str, bytes)):
                f.write(data)
            else:
                json.dump(data, f)
        return path

    def program(self, name, body):
        """An executable Python program; it leaves self.mark when it runs."""
        path = self.path(name)
        with open(path, "w") as f:
            f.write(f"#!{sys.executable}\nimport json, os, sys\nopen({self.mark!r}, 'a').write('{name}\\n')\n{body}\n")
        os.chmod(path, 0o755)
        return path

    def assertMessage(self, done, *parts, status=1):
        """One refusal: the exit status, each part in stderr, no traceback."""
        code, _, err = done
        self.assertEqual(code, status, err)
        self.assertNotIn("Traceback", err)
        for part in parts:
            self.assertIn(part, err)

    def assertNeverRan(self):
        self.assertFalse(os.path.exists(self.mark), "the program ran before the refusal")


class Repetitions(Folder):
    REPEATED = [entry("LeNet/forward/batch:2", rate, repetitions=3, repetition_index=i)
                for i, rate in enumerate((100.0, 100.0, 400.0))]
    MEAN = {"name": "LeNet/forward/batch:2_mean", "run_name": "LeNet/forward/batch:2", "run_type": "aggregate",
            "aggregate_name": "mean", "images/s": 200.0}
    STDDEV = dict(MEAN, name="LeNet/forward/batch:2_stddev", aggregate_name="stddev", **{"images/s": 0.0})

    def test_the_mean_aggregate_or_the_mean_of_the_runs_not_the_last(self):
        rates = interleave.benchmark_rates
        self.assertEqual(rates(self.REPEATED + [self.MEAN, self.STDDEV]), {"LeNet/forward/batch:2": 200.0})
        self.assertEqual(rates(self.REPEATED), {"LeNet/forward/batch:2": 200.0})
        failed = entry("LeNet/forward/batch:2", 1.0, error_occurred=True, error_message="oom")
        self.assertEqual(rates(self.REPEATED[:2] + [failed]), {"LeNet/forward/batch:2": 100.0})
        timed = [entry("LeNet/forward/batch:2/manual_time", 300.0), entry("LeNet/train_step/batch:2", 50.0)]
        self.assertEqual(rates(timed), {"LeNet/forward/batch:2": 300.0, "LeNet/train_step/batch:2": 50.0})

    def test_ratio_table_reads_repetitions_of_a_compare_results_file_by_their_mean(self):
        glassbox = self.write("g.json", google_benchmark(self.REPEATED + [self.MEAN, self.STDDEV]))
        pytorch = self.write("p.json", google_benchmark([entry("LeNet/forward/batch:2", 100.0)], torch=True))
        code, out, err = run("compare.py", glassbox, pytorch, "--out", self.path("both.json"))
        self.assertEqual(code, 0, err)
        self.assertIn("2.00", next(ln for ln in out.splitlines() if ln.startswith("LeNet/forward/batch:2")).split())
        code, out, err = run("ratio_table.py", self.path("both.json"))
        self.assertEqual(code, 0, err)
        self.assertIn("| LeNet | 2 | 2.00 |  |  |  |  |", out.splitlines())


class VariantsKeepTheirRows(Folder):
    def test_a_precision_after_the_batch_has_a_row_of_its_own(self):
        rounds = [{"glassbox": {"LeNet/forward/batch:8": 100.0, "LeNet/forward/batch:8/bf16": 300.0,
                                "LeNet/forward/batch:16/bf16": 240.0, "LeNet/evaluate/batch:8": 10.0},
                   "pytorch": {"LeNet/forward/batch:8": 100.0, "LeNet/forward/batch:8/bf16": 150.0,
                               "LeNet/forward/batch:16/bf16": 200.0, "LeNet/evaluate/batch:8": 10.0}}]
        path = self.write("bf16.json", interleaved(rounds))
        code, out, err = run("ratio_table.py", path)
        self.assertEqual(code, 0, err)
        lines = out.splitlines()
        self.assertIn("| LeNet | 8 | 1.00 |  |  |  |  |", lines)
        self.assertIn("| LeNet (bf16) | 8 | 2.00 |  |  |  |  |", lines)
        self.assertIn("| LeNet (bf16) | 16 | 1.20 |  |  |  |  |", lines)
        self.assertIn("ratio_table.py: LeNet/evaluate/batch:8: not in the table: no column for mode 'evaluate'", err)
        code, out, err = run("batch_scaling.py", "--all", path)
        self.assertEqual(code, 0, err)
        self.assertIn("| LeNet (bf16) | forward | 8 / 16 | 1.00 / 0.80 | 1.00 / 1.33 |", out.splitlines())
        self.assertIn("batch_scaling.py: LeNet/evaluate/batch:8: not in the table", err)


def lenet_rounds(names, count=3, load=None):
    """`count` rounds of LeNet benchmarks at batch 8, Glassbox's rate twice the peer's; with `load`, the
    CPUs of other work read around each measurement."""
    rounds = []
    for _ in range(count):
        rnd = {"glassbox": {f"LeNet/{n}/batch:8": 100.0 for n in names},
               "pytorch": {f"LeNet/{n}/batch:8": 50.0 for n in names}}
        if load is not None:
            rnd["load"] = {side: {name: load for name in rnd[side]} for side in ("glassbox", "pytorch")}
        rounds.append(rnd)
    return rounds


class BusyAsTheRunMarkedIt(Folder):
    def test_a_row_is_busy_past_the_busy_cpus_the_run_was_given(self):
        """0.2 CPUs of other work is busy for a run given --busy-cpus 0.1, though not past the default 0.3."""
        rounds = lenet_rounds(["forward"], load=0.2)
        strict = self.write("strict.json", interleaved(rounds, command=("--busy-cpus", "0.1", "LeNet")))
        code, out, err = run("ratio_table.py", strict)
        self.assertEqual(code, 0, err)
        self.assertIn("| LeNet | 8 | 2.00 (busy) |  |  |  |  |", out.splitlines())
        self.assertIn("1 of 1 rows measured beside other work, marked (busy)", out)
        default = self.write("default.json", interleaved(rounds))
        code, out, err = run("ratio_table.py", default)
        self.assertEqual(code, 0, err)
        self.assertIn("| LeNet | 8 | 2.00 |  |  |  |  |", out.splitlines())
        self.assertNotIn("busy", out)
        # A merged file's parts' commands give it (the lowest of theirs), as merge_results.py marks its rows.
        merged = interleaved(rounds, parts=[{"command": ["bench/interleave.py", "--busy-cpus", "0.1", "LeNet"]},
                                            {"command": ["bench/interleave.py", "AlexNet"]}])
        merged["command"] = ["bench/merge_results.py", "--out", "merged.json"]
        code, out, err = run("ratio_table.py", self.write("merged.json", merged))
        self.assertEqual(code, 0, err)
        self.assertIn("| LeNet | 8 | 2.00 (busy) |  |  |  |  |", out.splitlines())
        # compare.py makes the rows of a run cut short (no "rows") with the run's own --busy-cpus too.
        partial = interleaved(rounds, command=("--busy-cpus", "0.1", "LeNet"), partial=True)
        del partial["rows"]
        code, out, err = run("compare.py", self.write("partial.json", partial))
        self.assertEqual(code, 0, err)
        self.assertIn("busy (0.2 CPUs of other work)", out)


class OneSideOnly(Folder):
    def test_a_benchmark_one_side_measured_is_a_row_without_a_ratio_and_named(self):
        rounds = [{"glassbox": {"LeNet/forward/batch:8": 100.0, "LeNet/train_step/batch:8": 30.0},
                   "pytorch": {"LeNet/forward/batch:8": 50.0, "LeNet/inference/batch:8/channels_last": 70.0,
                               "AlexNet/forward/batch:4": 10.0}}]
        path = self.write("one-side.json", interleaved(rounds))
        code, out, err = run("ratio_table.py", "--below", "3", path)
        self.assertEqual(code, 0, err)
        lines = out.splitlines()
        self.assertIn("| LeNet | 8 | 2.00 |  | (only Glassbox) | (only PyTorch) |  |", lines)
        self.assertIn("| AlexNet | 4 | (only PyTorch) |  |  |  |  |", lines)
        self.assertIn("3 of 4 rows have one side only, so no ratio: only Glassbox measured LeNet/train_step/batch:8; "
                      "only PyTorch measured LeNet/inference/batch:8, AlexNet/forward/batch:4.", lines)
        # Only a row with a ratio counts among the ratios.
        self.assertIn("1 of 1 ratios under 3.0:", lines)
        rows = {row["name"]: row for row in interleave.rows_from_rounds(rounds, ["LeNet"])}
        self.assertEqual(sorted(rows), ["AlexNet/forward/batch:4", "LeNet/forward/batch:8",
                                        "LeNet/inference/batch:8", "LeNet/train_step/batch:8"])
        self.assertEqual((rows["LeNet/inference/batch:8"]["pytorch_images_per_s"],
                          rows["LeNet/inference/batch:8"]["ratio"]), (70.0, None))
        code, out, err = run("batch_scaling.py", path)
        self.assertEqual(code, 0, err)
        self.assertIn("batch_scaling.py: AlexNet/forward/batch:4: not in the table: no Glassbox figure", err)

    def test_the_names_are_brief(self):
        rounds = [{"glassbox": {}, "pytorch": {f"LeNet/forward/batch:{b}": 50.0 for b in range(1, 10)}}]
        code, out, err = run("ratio_table.py", self.write("peer.json", interleaved(rounds)))
        self.assertEqual(code, 0, err)
        self.assertIn("9 of 9 rows have one side only, so no ratio: only PyTorch measured LeNet/forward/batch:1, "
                      "LeNet/forward/batch:2, LeNet/forward/batch:3, LeNet/forward/batch:4, LeNet/forward/batch:5, "
                      "LeNet/forward/batch:6 and 3 more.", out.splitlines())
        self.assertIn("0 of 0 ratios under 1.0.", out.splitlines())


class OneTable(Folder):
    def test_files_run_with_other_settings_or_environments_are_refused(self):
        rounds = lenet_rounds(["forward"])
        plain = self.write("plain.json", interleaved(rounds, command=("--threads", "2", "LeNet")))
        cases = {"one-thread.json": ((("--threads", "1", "LeNet"), {}), f"--threads: 2 in {plain}, 1 in "),
                 "bf16.json": ((("--precision", "bf16", "LeNet"), {}), f"--precision: fp32 in {plain}, bf16 in "),
                 "cuda.json": ((("--device", "cuda", "LeNet"), {}), f"--device: cpu in {plain}, cuda in "),
                 "avx2.json": ((("LeNet",), {"environment": {"ONEDNN_MAX_CPU_ISA": "AVX2"}}),
                               f"ran in different environments (variables that cap either side's kernels), not one "
                               f"table: ONEDNN_MAX_CPU_ISA: unset in {plain}, AVX2 in ")}
        for name, ((command, more), says) in cases.items():
            other = self.write(name, interleaved(rounds, command=command, **more))
            for tool in ("ratio_table.py", "batch_scaling.py"):
                with self.subTest(tool=tool, file=name):
                    self.assertMessage(run(tool, plain, other), f"{tool}: ", says + other)
        # Runs that differ in the networks, batches, modes, rounds or the machine watch are one table.
        other = self.write("other.json", interleaved(
            lenet_rounds(["train_step"], count=5),
            command=("--rounds", "5", "--batch", "8", "--modes", "train_step", "--idle-check", "1", "LeNet")))
        for tool in ("ratio_table.py", "batch_scaling.py"):
            with self.subTest(tool=tool, file="other.json"):
                self.assertEqual(run(tool, plain, other)[0], 0)
        # A file whose command cannot be read cannot be checked against the others.
        compared = self.write("compared.json", {"glassbox": google_benchmark([entry("LeNet/forward/batch:8", 2.0)]),
                                                "pytorch": google_benchmark([entry("LeNet/forward/batch:8", 1.0)],
                                                                            torch=True)})
        self.assertMessage(run("ratio_table.py", plain, compared),
                           f"{compared} records no bench/interleave.py command that can be read")
        self.assertEqual(run("ratio_table.py", compared)[0], 0)


class RoundsAndLoads(Folder):
    def test_a_row_over_more_rounds_than_the_rest_says_so(self):
        first = self.write("first.json", interleaved(lenet_rounds(["forward", "train_step", "inference"])))
        again = self.write("again.json", interleaved(lenet_rounds(["forward"])))
        out_file = self.path("table.md")
        code, out, err = run("ratio_table.py", "--pool-rounds", "--out", out_file, first, again)
        self.assertEqual(code, 0, err)
        with open(out_file) as f:
            lines = f.read().splitlines()
        self.assertIn("| LeNet | 8 | 2.00 (6 rounds) |  | 2.00 | 2.00 |  |", lines)
        self.assertIn("0 of 3 ratios under 1.0 (1 of the 3 over more rounds than the usual 3, marked (N rounds)).",
                      lines)
        self.assertIn("(N rounds): the median of N rounds, where most rows have 3.", lines[2])
        # Without pooling the last file's rounds count: every row over 3, none marked.
        code, out, err = run("ratio_table.py", first, again)
        self.assertEqual(code, 0, err)
        self.assertNotIn("rounds)", out)
        self.assertIn("0 of 3 ratios under 1.0.", out.splitlines())

    def test_rows_given_more_rounds_are_also_counted_over_their_first_rounds_alone(self):
        """A row under 1.0 given three more rounds that read above it: pooled it reads above 1.0, so the table also
        counts every row over its first three rounds, where it was under."""
        slow = lenet_rounds(["forward", "train_step", "inference"])
        for rnd in slow:
            rnd["glassbox"]["LeNet/forward/batch:8"] = 40.0
        fast = lenet_rounds(["forward"])
        for rnd in fast:
            rnd["glassbox"]["LeNet/forward/batch:8"] = 200.0
        code, out, err = run("ratio_table.py", "--pool-rounds", self.write("slow.json", interleaved(slow)),
                             self.write("fast.json", interleaved(fast)))
        self.assertEqual(code, 0, err)
        lines = out.splitlines()
        self.assertIn("0 of 3 ratios under 1.0 (1 of the 3 over more rounds than the usual 3, marked (N rounds)).",
                      lines)
        self.assertIn("Over each row's first 3 rounds alone: 1 of 3 ratios under 1.0 (0.80 to 2.00).", lines)
        # Every row over the same rounds: no such line.
        code, out, err = run("ratio_table.py", self.write("even.json", interleaved(slow)))
        self.assertEqual(code, 0, err)
        self.assertNotIn("rounds alone", out)

    def test_a_ratio_with_one_side_short_of_rounds_is_marked_by_the_shorter_side(self):
        """PyTorch's train_step failed in the third round: its median, and so the ratio, rests on two rounds."""
        rounds = lenet_rounds(["forward", "train_step", "inference"])
        del rounds[2]["pytorch"]["LeNet/train_step/batch:8"]
        code, out, err = run("ratio_table.py", self.write("short.json", interleaved(rounds)))
        self.assertEqual(code, 0, err)
        self.assertIn("| LeNet | 8 | 2.00 |  | 2.00 (2 rounds) | 2.00 |  |", out)
        self.assertIn("0 of 3 ratios under 1.0 (1 of the 3 over fewer rounds than the usual 3, marked (N rounds)).",
                      out.splitlines())

    def test_the_first_rounds_of_a_row_are_those_that_measured_it(self):
        """Glassbox's forward failed in the first file's first round: its first three measurements are the first
        file's two and the second file's first (40, 200, 40: under 1.0), not the first three rounds' two."""
        first = lenet_rounds(["forward", "train_step", "inference"])
        del first[0]["glassbox"]["LeNet/forward/batch:8"]
        first[1]["glassbox"]["LeNet/forward/batch:8"], first[2]["glassbox"]["LeNet/forward/batch:8"] = 40.0, 200.0
        again = lenet_rounds(["forward"])
        for rnd in again:
            rnd["glassbox"]["LeNet/forward/batch:8"] = 40.0
        code, out, err = run("ratio_table.py", "--pool-rounds", self.write("first.json", interleaved(first)),
                             self.write("again.json", interleaved(again)))
        self.assertEqual(code, 0, err)
        self.assertIn("Over each row's first 3 rounds alone: 1 of 3 ratios under 1.0 (0.80 to 2.00).",
                      out.splitlines())

    def test_a_table_without_load_readings_says_so(self):
        said = "The machine's load was not recorded for any row"
        unwatched = self.write("unwatched.json", interleaved(lenet_rounds(["forward"])))
        watched = self.write("watched.json", interleaved(lenet_rounds(["forward"], load=0.0)))
        for tool in ("ratio_table.py", "compare.py"):
            with self.subTest(tool=tool):
                code, out, err = run(tool, unwatched)
                self.assertEqual(code, 0, err)
                self.assertIn(said, out)
                self.assertIn("an unmarked ratio is not known to come from a quiet machine", out)
                code, out, err = run(tool, watched)
                self.assertEqual(code, 0, err)
                self.assertNotIn("was not recorded", out)
        rounds = lenet_rounds(["forward"], load=0.0)
        for rnd in rounds:
            rnd["glassbox"]["LeNet/train_step/batch:8"] = rnd["pytorch"]["LeNet/train_step/batch:8"] = 10.0
        code, out, err = run("ratio_table.py", self.write("some.json", interleaved(rounds)))
        self.assertEqual(code, 0, err)
        self.assertIn("The machine's load was not recorded for 1 of 2 rows", out)


class FittedThreads(Folder):
    """bench_nets fits its threads to the cores other work leaves free (its context's cpu_threads); the peer runs
    --threads, so a row where Glassbox ran fewer compares unequal thread counts and must say so."""
    NAME = "LeNet/forward/batch:8"

    def interleave(self, name, used, *more):
        """An interleave.py run of two rounds, --threads 2, where the stand-in bench_nets reports `used` threads."""
        bench = self.program("bench_nets", (
            "out = next(a.split('=', 1)[1] for a in sys.argv if a.startswith('--benchmark_out='))\n"
            "context = {'device': 'cpu', 'commit': 'abc', 'cpu_threads': os.environ['USED_THREADS'],\n"
            "           'cpu_threads_fit': 'one thread fewer per core of other work'}\n"
            f"json.dump({{'context': context, 'benchmarks': [{{'name': {self.NAME!r}, 'images/s': 100.0}}]}}, "
            "open(out, 'w'))"))
        python = self.program("python", (
            "out = sys.argv[sys.argv.index('--json') + 1]\n"
            f"json.dump({{'context': {{'torch': '2.x'}}, "
            f"'benchmarks': [{{'name': {self.NAME!r}, 'images/s': 50.0}}]}}, open(out, 'w'))"))
        path = self.path(name)
        done = run("interleave.py", "--bench", bench, "--python", python, "--rounds", "2", "--modes", "forward",
                   "--batch", "8", "--threads", "2", "--idle-check", "0", "--min-time", "0.01", "--json", path,
                   *more, "LeNet", env=dict(os.environ, USED_THREADS=used))
        self.assertEqual(done[0], 0, done[2])
        with open(path) as f:
            return path, json.load(f), done[1]

    def table(self, path, *more):
        code, out, err = run("ratio_table.py", *more, path)
        self.assertEqual(code, 0, err)
        return out

    def test_a_row_glassbox_ran_on_fewer_threads_is_marked(self):
        fitted, data, out = self.interleave("fitted.json", "1")
        self.assertEqual([rnd.get("threads") for rnd in data["rounds"]], [{"glassbox": {self.NAME: 1}}] * 2)
        self.assertEqual(data["rows"][0]["glassbox_threads"], 1)
        said = "1 of 1 rows ran Glassbox on other CPU threads than the run's --threads in some round"
        row = next(ln for ln in out.splitlines() if ln.startswith(self.NAME))
        self.assertTrue(row.endswith("nchw  Glassbox on 1 thread"), row)
        self.assertIn(said, out)
        code, out, err = run("compare.py", fitted)
        self.assertEqual(code, 0, err)
        self.assertIn("nchw  Glassbox on 1 thread", out)
        self.assertIn(said, out)
        lines = self.table(fitted).splitlines()
        self.assertIn("| LeNet | 8 | 2.00 (1 thread) |  |  |  |  |", lines)
        self.assertIn("0 of 1 ratios under 1.0 (1 of the 1 with Glassbox on other CPU threads than --threads in "
                      "some round, marked (N threads)).", lines)
        self.table(fitted, "--out", self.path("table.md"))
        with open(self.path("table.md")) as f:
            self.assertIn(" (N threads): Glassbox ran N CPU threads in one of the row's rounds, not the run's "
                          "--threads, which PyTorch ran", f.read().splitlines()[2])

    def test_a_run_on_the_threads_asked_for_or_on_a_gpu_is_not_marked(self):
        for name, used, more in (("asked.json", "2", ()), ("gpu.json", "1", ("--device", "cuda"))):
            with self.subTest(file=name):
                path, data, out = self.interleave(name, used, *more)
                self.assertEqual([sorted(rnd) for rnd in data["rounds"]], [["glassbox", "load", "pytorch"]] * 2)
                self.assertNotIn("glassbox_threads", data["rows"][0])
                self.assertNotIn("thread", out.split("\n", 1)[1])  # the heading names the --threads asked for
                table = self.table(path)
                self.assertIn("| LeNet | 8 | 2.00 |  |  |  |  |", table.splitlines())
                self.assertNotIn("thread", table)

    def test_a_merged_file_keeps_the_mark(self):
        asked, _, _ = self.interleave("asked.json", "2")
        fitted, _, _ = self.interleave("fitted.json", "1")
        merged = self.path("merged.json")
        for files, pool, marked in (((asked, fitted), False, True), ((fitted, asked), False, False),
                                    ((fitted, asked), True, True)):
            with self.subTest(files=[os.path.basename(f) for f in files], pool=pool):
                code, _, err = run("merge_results.py", *(["--pool-rounds"] if pool else []), "--out", merged, *files)
                self.assertEqual(code, 0, err)
                with open(merged) as f:
                    data = json.load(f)
                self.assertEqual(data["rows"][0].get("glassbox_threads"), 1 if marked else None)
                self.assertEqual(sum(1 for rnd in data["rounds"] if rnd.get("threads")), 2 if marked else 0)
                self.assertEqual("| LeNet | 8 | 2.00 (1 thread) |  |  |  |  |" in self.table(merged).splitlines(),
                                 marked)
                code, out, err = run("compare.py", merged)
                self.assertEqual(code, 0, err)
                self.assertEqual("Glassbox on 1 thread" in out, marked)


class OutputIsNotAnInput(Folder):
    def setUp(self):
        super().setUp()
        self.part = self.write("part.json", interleaved(
            [{"glassbox": {"LeNet/forward/batch:8": 100.0}, "pytorch": {"LeNet/forward/batch:8": 50.0}}]))
        with open(self.part) as f:
            self.before = f.read()

    def assertUntouched(self):
        with open(self.part) as f:
            self.assertEqual(f.read(), self.before)
        self.assertEqual(sorted(os.listdir(self.dir)), ["part.json"])

    def test_each_script_refuses_to_write_over_its_input(self):
        another_name = os.path.join(self.dir, ".", "part.json")
        for done, status in ((run("merge_results.py", "--out", another_name, self.part), 1),
                             (run("ratio_table.py", "--out", self.part, self.part), 1),
                             (run("thread_scaling.py", self.part, self.part, "--out", another_name), 2)):
            self.assertMessage(done, "is also an input", status=status)
            self.assertUntouched()
        glassbox = self.write("g.json", google_benchmark([entry("LeNet/forward/batch:8", 100.0)]))
        pytorch = self.write("p.json", google_benchmark([entry("LeNet/forward/batch:8", 50.0)], torch=True))
        self.assertMessage(run("compare.py", glassbox, pytorch, "--out", glassbox),
                           f"--out {glassbox} is also an input", status=2)
        with open(glassbox) as f:
            self.assertIn("benchmarks", json.load(f))

    def test_a_folder_or_a_missing_folder_is_refused(self):
        missing = self.path("no-such-folder/table.md")
        self.assertMessage(run("ratio_table.py", "--out", missing, self.part), "there is no folder")
        self.assertMessage(run("ratio_table.py", "--out", self.dir, self.part), "is a folder, not a file")
        self.assertMessage(run("thread_scaling.py", self.part, self.part, "--out", missing), "there is no folder",
                           status=2)
        self.assertMessage(run("merge_results.py", "--out", self.dir, self.part), "is a folder, not a file")
        self.assertUntouched()

    def test_write_json_leaves_no_temporary_where_it_fails(self):
        folder = self.path("a-folder")
        os.mkdir(folder)
        with self.assertRaises(results_io.BadInput):
            results_io.write_json(folder, {"rows": []})
        self.assertEqual(sorted(os.listdir(self.dir)), ["a-folder", "part.json"])
        results_io.write_json(self.path("out.json"), {"rows": []})
        self.assertEqual(sorted(os.listdir(self.dir)), ["a-folder", "out.json", "part.json"])


class BadRates(Folder):
    def test_compare_refuses_a_rate_that_is_not_a_finite_number_above_0(self):
        pytorch = self.write("p.json", google_benchmark([entry("LeNet/forward/batch:8", 50.0)], torch=True))
        for text in ("NaN", "Infinity", "-5", "0", "true", '"800"'):
            with self.subTest(rate=text):
                raw = json.dumps(google_benchmark([entry("LeNet/forward/batch:8", "RATE")])).replace('"RATE"', text)
                glassbox = self.write("g.json", raw)
                self.assertMessage(run("compare.py", glassbox, pytorch), glassbox,
                                   'benchmark LeNet/forward/batch:8: "images/s" is', "not a number above 0", status=2)
        # Other figures may be 0, not negative; a failed run's figures are not read.
        zero = self.write("z.json", google_benchmark([entry("LeNet/forward/batch:8", 100.0, **{"TFLOP/s": 0.0})]))
        self.assertEqual(run("compare.py", zero, pytorch)[0], 0)
        negative = self.write("n.json", google_benchmark([entry("LeNet/forward/batch:8", 100.0, peak_memory=-1)]))
        self.assertMessage(run("compare.py", negative, pytorch), '"peak_memory" is -1, not a number of 0 or more',
                           status=2)
        failed = self.write("f.json", google_benchmark([entry("LeNet/forward/batch:8", 0, error_occurred=True,
                                                              error_message="out of memory")]))
        code, out, err = run("compare.py", failed, pytorch)
        self.assertEqual(code, 1, err)  # nothing measured by both: as before
        self.assertIn("Glassbox error: out of memory", out)

    def gemm(self, rate):
        server = ("for line in sys.stdin:\n    print(os.environ['RATE'] + ' lib', flush=True)")
        bench = self.program("bench_gemm", "if '--list-shapes' in sys.argv:\n    print('64,64,64 conv1')\n"
                                           "    sys.exit(0)\nprint('ready: stand-in', flush=True)\n" + server)
        python = self.program("python", "print('ready: peer', flush=True)\n" + server)
        env = dict(os.environ, RATE=rate)
        return run("gemm_vs_torch.py", "--bench", bench, "--python", python, "--rounds", "1", "--pairs", "1",
                   "--window", "0.01", env=env)

    def test_gemm_refuses_a_rate_that_would_make_no_ratio(self):
        code, out, err = self.gemm("100")
        self.assertEqual(code, 0, err)
        self.assertIn("64x64x64", out)
        for rate in ("nan", "-3", "0", "fast"):
            with self.subTest(rate=rate):
                self.assertMessage(self.gemm(rate), "gemm_vs_torch.py:", f"answered '{rate} lib' for 64x64x64",
                                   "not a rate above 0")


class BadFiles(Folder):
    SHAPES = {
        "missing.json": None,
        "empty.json": "",
        "latin1.json": b"\xff\xfe{}",
        "array.json": [1, 2],
        "one-side.json": google_benchmark([entry("LeNet/forward/batch:8", 1.0)]),
        "short-name.json": {"rounds": [{"glassbox": {"LeNet/forward": 1.0}, "pytorch": {}}]},
        "no-batch.json": {"rounds": [{"glassbox": {"LeNet/forward/b8": 1.0}, "pytorch": {}}]},
        "string-rate.json": {"rounds": [{"glassbox": {"LeNet/forward/batch:8": "fast"}, "pytorch": {}}]},
        "no-peer.json": {"rounds": [{"glassbox": {"LeNet/forward/batch:8": 1.0}}]},
        "no-rounds.json": {"rounds": []},
        "command.json": {"rounds": [{"glassbox": {"LeNet/forward/batch:8": 1.0}, "pytorch": {}}], "command": "x"},
        "threads.json": {"rounds": [{"glassbox": {"LeNet/forward/batch:8": 1.0}, "pytorch": {},
                                     "threads": {"glassbox": {"LeNet/forward/batch:8": "1"}}}]},
    }
    SAYS = {"missing.json": "cannot read", "empty.json": "is empty", "latin1.json": "is not UTF-8",
            "array.json": "holds a JSON array", "one-side.json": "one side's Google Benchmark JSON",
            "short-name.json": "'LeNet/forward' is not named NET/MODE/batch:N",
            "no-batch.json": "'LeNet/forward/b8' is not named NET/MODE/batch:N",
            "string-rate.json": 'LeNet/forward/batch:8 is "fast", not a number above 0',
            "no-peer.json": 'round 1 has no "pytorch" object', "no-rounds.json": "no round holds a measurement",
            "command.json": "\"command\" is not a list of the command's arguments",
            "threads.json": "the threads of glassbox's LeNet/forward/batch:8 is \"1\", not a whole number above 0"}

    def files(self):
        return {name: self.path(name) if data is None else self.write(name, data) for name, data in self.SHAPES.items()}

    def test_the_table_scripts_name_the_file_and_the_problem(self):
        for name, path in self.files().items():
            for tool in ("ratio_table.py", "batch_scaling.py", "merge_results.py"):
                with self.subTest(tool=tool, file=name):
                    args = ("--out", self.path("merged.json"), path) if tool == "merge_results.py" else (path,)
                    self.assertMessage(run(tool, *args), f"{tool}: ", name, self.SAYS[name])
            with self.subTest(tool="compare.py", file=name):
                if name not in ("array.json", "one-side.json"):  # compare.py reads those as other files
                    self.assertMessage(run("compare.py", path), name, status=2)

    def test_compare_names_wrong_shapes(self):
        cases = {
            "name.json": ({"glassbox": {"benchmarks": [{"name": 5}]}, "pytorch": {"benchmarks": []}},
                          "benchmarks[0].name is 5, not a string"),
            "precision.json": ({"context": {"precision": ["x"]}, "benchmarks": []}, 'context.precision is ["x"]'),
            "rows.json": ({"rounds": [{"glassbox": {"A/b/batch:1": 1}, "pytorch": {}}], "rows": [{"name": "x"}]},
                          'row x has no "glassbox_images_per_s"'),
            "latin1.json": (b"\xff{}", "is not UTF-8 text"),
        }
        for name, (data, says) in cases.items():
            with self.subTest(file=name):
                self.assertMessage(run("compare.py", self.write(name, data)), "compare.py: error:", says, status=2)


class RefusedBeforeTheRun(Folder):
    def test_a_missing_output_folder_is_refused_before_the_program_runs(self):
        bench = self.program("bench_nets", "sys.exit(3)")
        missing = self.path("no-such-folder/out.json")
        cases = {
            "interleave.py": ["--bench", bench, "--python", sys.executable, "--json", missing, "LeNet"],
            "backward_over_forward.py": ["--bench", bench, "--json", missing, "LeNet:8"],
            "ab_builds.py": ["--base", bench, "--new", bench, "--json", missing, "LeNet:8"],
            "train_vs_pytorch.py": ["--glassbox", bench, "--python", sys.executable, "--json", missing],
            "gemm_vs_torch.py": ["--bench", bench, "--python", sys.executable, "--json", missing],
            "data_vs_pytorch.py": ["--bench-data", bench, "--python", sys.executable, "--folder", self.dir,
                                   "--json", missing],
        }
        for tool, args in cases.items():
            with self.subTest(tool=tool):
                self.assertMessage(run(tool, *args), f"--json {missing}: there is no folder")
                self.assertNeverRan()
        self.assertMessage(run("interleave.py", "--bench", bench, "--python", sys.executable, "--json", self.dir,
                               "LeNet"), "is a folder, not a file")
        self.assertNeverRan()

    def test_a_missing_program_is_a_message(self):
        missing = self.path("no-such-program")
        cases = {
            "interleave.py": ["--bench", missing, "LeNet"],
            "backward_over_forward.py": ["--bench", missing, "LeNet:8"],
            "ab_builds.py": ["--base", missing, "--new", missing, "LeNet:8"],
            "ab_layers.py": ["--glassbox", missing, "LeNet", "8"],
            "gemm_vs_torch.py": ["--bench", missing],
            "train_vs_pytorch.py": ["--glassbox", missing],
            "data_vs_pytorch.py": ["--bench-data", missing, "--folder", self.dir],
        }
        for tool, args in cases.items():
            with self.subTest(tool=tool):
                self.assertMessage(run(tool, *args), f"{missing}: no such program")
        bench = self.program("bench_data", "sys.exit(0)")
        self.assertMessage(run("data_vs_pytorch.py", "--bench-data", bench, "--python", sys.executable, "--folder",
                               self.path("no-such-folder")), "data_vs_pytorch.py: --folder", "no such folder")
        self.assertNeverRan()

    def test_a_filter_that_is_not_a_regular_expression_is_a_message(self):
        self.assertMessage(run("gemm_vs_torch.py", "--filter", "("), "--filter '(' is not a regular expression",
                           status=2)


class Counts(Folder):
    def test_zero_and_negative_counts_are_refused_when_the_options_are_read(self):
        cases = [
            ("backward_over_forward.py", "--rounds", "0", "LeNet:8"),
            ("ab_layers.py", "LeNet", "8", "--rounds", "0"),
            ("ab_layers.py", "LeNet", "0"),
            ("train_vs_pytorch.py", "--rounds", "0"),
            ("data_vs_pytorch.py", "--folder", ".", "--rounds", "0"),
            ("torch_profile.py", "LeNet", "8", "forward", "--steps", "0"),
            ("torch_profile.py", "LeNet", "8", "forward", "--steps", "-1"),
            ("torch_profile.py", "LeNet", "0", "forward"),
            ("torch_profile.py", "LeNet", "-2", "forward"),
            ("interleave.py", "--threads", "0", "LeNet"),
            ("interleave.py", "--threads", "-1", "LeNet"),
            ("interleave.py", "--rounds", "0", "LeNet"),
            ("onednn_verbose_sum.py", "log", "--steps", "0"),
            ("onednn_verbose_sum.py", "log", "--steps", "-2"),
            ("onednn_verbose_sum.py", "log", "--steps", "nan"),
            ("ab_builds.py", "--base", "b", "--new", "n", "--rounds", "0", "LeNet:8"),
            ("gemm_vs_torch.py", "--threads", "x"),
        ]
        for tool, *args in cases:
            with self.subTest(tool=tool, args=args):
                self.assertMessage(run(tool, *args), "error: argument", status=2)

    def test_interleave_refuses_no_mode_an_unknown_mode_and_a_machine_watch_it_cannot_keep_before_the_run(self):
        """An empty or misspelt --modes measures nothing; a NaN --idle-check or --busy-cpus turns the busy check off
        without a word, an infinite --idle-check never ends: each is a usage error before the first program runs."""
        bench = self.program("bench_nets", "sys.exit(3)")
        options = ["--bench", bench, "--python", sys.executable, "--json", self.path("out.json")]
        no_mode = "--modes takes one mode or several, comma-separated, with none empty"
        cases = [(["--modes", ","], no_mode), (["--modes", ""], no_mode), (["--modes", "forward,,train_step"], no_mode),
                 (["--modes", "forward,"], no_mode),
                 (["--modes", "forward,train-step"],
                  "--modes: no mode 'train-step'; the modes are forward, forward_backward, train_step, inference"),
                 (["--idle-check", "inf"], "argument --idle-check: must be a finite number from 0 to 60, got inf"),
                 (["--idle-check", "nan"], "argument --idle-check: must be a finite number from 0 to 60, got nan"),
                 (["--idle-check", "-1"], "argument --idle-check: must be a finite number from 0 to 60, got -1"),
                 (["--idle-check", "1e9"], "argument --idle-check: must be a finite number from 0 to 60, got 1e9"),
                 (["--busy-cpus", "nan"], "argument --busy-cpus: must be a finite number, 0 or more, got nan"),
                 (["--busy-cpus", "inf"], "argument --busy-cpus: must be a finite number, 0 or more, got inf"),
                 (["--busy-cpus", "-0.5"], "argument --busy-cpus: must be a finite number, 0 or more, got -0.5"),
                 (["--busy-cpus", "1e6"], f"--busy-cpus 1e+06: this machine has {os.cpu_count()} CPUs, so no "
                                          "reading could exceed it and no row would be marked busy")]
        for args, says in cases:
            with self.subTest(args=args):
                self.assertMessage(run("interleave.py", *options, *args, "LeNet"), says, status=2)
                self.assertNeverRan()
                self.assertFalse(os.path.exists(self.path("out.json")))
        # With no check (--idle-check 0) no threshold is used: the run starts (and its stand-in fails).
        self.assertMessage(run("interleave.py", *options, "--idle-check", "0", "--busy-cpus", "1e6", "LeNet"),
                           "failed (3)")

    def test_interleave_refuses_a_language_model_off_the_cpu_or_in_another_precision_before_the_run(self):
        """A language model's peer (bench/peers/lstm_lm.py) runs on the CPU in fp32 only: on a GPU or in bf16 its
        figure would pair with another kind of Glassbox figure, so such a run is a usage error before it starts."""
        bench = self.program("bench_nets", "sys.exit(3)")
        options = ["--bench", bench, "--python", sys.executable, "--idle-check", "0", "--json", self.path("out.json")]
        peer = "a language model's PyTorch side (bench/peers/lstm_lm.py) runs on the CPU in fp32 only"
        cases = [(["--device", "cuda"], ["LeNet", "LSTM"], f"LSTM: {peer}, so with --device cuda"),
                 (["--precision", "bf16"], ["LSTMSmall"], f"LSTMSmall: {peer}, so with --precision bf16"),
                 (["--device", "cuda:0", "--precision", "fp16"], ["lstmlarge", "LSTM"],
                  f"lstmlarge, LSTM: {peer}, so with --device cuda:0 and --precision fp16")]
        for args, nets, says in cases:
            with self.subTest(args=args, nets=nets):
                self.assertMessage(run("interleave.py", *options, *args, *nets), says, status=2)
                self.assertNeverRan()
                self.assertFalse(os.path.exists(self.path("out.json")))
        # On the CPU in fp32 the run starts (and its stand-in fails); other networks may run on a GPU in bf16.
        self.assertMessage(run("interleave.py", *options, "LSTM"), "failed (3)")
        os.remove(self.mark)
        self.assertMessage(run("interleave.py", *options, "--device", "cuda", "--precision", "bf16", "LeNet"),
                           "failed (3)")

    def test_onednn_verbose_sum_reads_its_steps_or_names_a_missing_log(self):
        log = self.write("gb.log", "onednn_verbose,v1,primitive,exec,cpu,convolution,brg,forward_training,"
                                   "src:f32,,alg:direct,mb2_ic3oc8,1.5\n" * 4)
        code, out, err = run("onednn_verbose_sum.py", log, "--steps", "2")
        self.assertEqual(code, 0, err)
        self.assertIn("3.00 ms of oneDNN per step (2 steps)", out)
        self.assertIn("6.00 ms of oneDNN per step (1 steps)", run("onednn_verbose_sum.py", log)[1])
        self.assertMessage(run("onednn_verbose_sum.py", self.path("none.log")), "cannot read", "none.log")

    def test_training_logs_that_give_no_figures_are_named(self):
        epoch = {"event": "epoch", "epoch": 1, "seconds": 2.0, "images_per_second": 500.0,
                 "data_wait_seconds": 0.5, "test_accuracy": 0.8}
        self.assertEqual(train_vs_pytorch.summary([epoch], "x")["data_share"], 0.25)
        for epochs, says in (([], "no epoch lines"), ([dict(epoch, seconds=0)], '"seconds" is 0'),
                             ([dict(epoch, test_accuracy=None)], "no test accuracy"),
                             ([dict(epoch, images_per_second=None)], '"images_per_second" is null')):
            with self.subTest(says=says):
                with self.assertRaises(results_io.BadInput) as caught:
                    train_vs_pytorch.summary(epochs, "glassbox, round 1")
                self.assertIn("glassbox, round 1", str(caught.exception))
                self.assertIn(says, str(caught.exception))

    def test_train_vs_pytorch_names_a_log_of_no_epochs(self):
        writes = "log = sys.argv[sys.argv.index('--log') + 1]\nopen(log, 'w').write('{\"event\": \"start\"}\\n')"
        glassbox = self.program("glassbox", writes)
        python = self.program("python", writes)
        self.assertMessage(run("train_vs_pytorch.py", "--glassbox", glassbox, "--python", python, "--rounds", "1",
                               "--pipelines", "tensors"), "train_vs_pytorch.py: glassbox, round 1: the log has no "
                                                          "epoch lines")


class ThreadScaling(Folder):
    def results(self, name, command, rows, **more):
        return self.write(name, {"command": command, "builds": {"glassbox": "a", "pytorch": "b"}, "machine": "M",
                                 "rows": [{"name": n, "glassbox_images_per_s": g, "pytorch_images_per_s": p, **extra}
                                          for n, g, p, extra in rows], "rounds": [], **more})

    def test_the_equals_form_merged_parts_and_unpaired_benchmarks(self):
        one = self.results("one.json", ["bench/interleave.py", "--threads", "1", "LeNet"],
                           [("A", 100.0, 100.0, {"busiest_cpus": 0.5}), ("B", 100.0, 100.0, {})])
        four = self.results("four.json", ["bench/interleave.py", "--threads=4", "LeNet"],
                            [("A", 150.0, 120.0, {"busiest_cpus": None}), ("C", 300.0, 300.0, {})])
        code, out, err = run("thread_scaling.py", one, four)
        self.assertEqual(code, 0, err)
        self.assertIn("### 4 threads against 1;", out)
        self.assertIn("| A | 100.0 | 150.0 | 1.50 | 100.0 | 120.0 | 1.20 | 0.50 |", out)
        self.assertIn("Not in both files, so no row: B (only in one.json); C (only in four.json)", out)
        merged = self.results("merged.json", ["bench/merge_results.py", "--out", "merged.json"],
                              [("A", 150.0, 120.0, {})],
                              parts=[{"command": ["bench/interleave.py", "--threads", "3", "LeNet"]},
                                     {"command": ["bench/interleave.py", "--threads=3", "AlexNet"]}])
        code, out, err = run("thread_scaling.py", one, merged)
        self.assertEqual(code, 0, err)
        self.assertIn("### 3 threads against 1;", out)
        self.assertIn("| A | 100.0 | 150.0 | 1.50 | 100.0 | 120.0 | 1.20 | 0.50 |", out)

    def test_a_thread_count_that_cannot_be_read_is_a_message(self):
        one = self.results("one.json", ["bench/interleave.py", "--threads", "1"], [("A", 1.0, 1.0, {})])
        bad = self.results("bad.json", ["bench/interleave.py", "--threads", "two"], [("A", 1.0, 1.0, {})])
        self.assertMessage(run("thread_scaling.py", one, bad), "bad.json: its command's --threads 'two'", status=2)
        merged = self.results("m.json", ["bench/merge_results.py"], [("A", 1.0, 1.0, {})])
        self.assertMessage(run("thread_scaling.py", one, merged), "m.json: records no bench/interleave.py command",
                           status=2)
        negative = self.results("n.json", ["bench/interleave.py"], [("A", -1.0, 1.0, {})])
        self.assertMessage(run("thread_scaling.py", one, negative), 'row A: "glassbox_images_per_s" is -1.0',
                           status=2)


class GivenTwice(Folder):
    def test_a_file_given_twice_is_refused_where_its_rounds_would_count_twice(self):
        part = self.write("part.json", interleaved(
            [{"glassbox": {"LeNet/forward/batch:8": 100.0}, "pytorch": {"LeNet/forward/batch:8": 50.0}}]))
        again = os.path.join(self.dir, ".", "part.json")
        self.assertMessage(run("merge_results.py", "--pool-rounds", "--out", self.path("m.json"), part, again),
                           "is given twice")
        self.assertFalse(os.path.exists(self.path("m.json")))
        self.assertMessage(run("ratio_table.py", "--pool-rounds", part, again), "is given twice")
        self.assertEqual(run("ratio_table.py", part, part)[0], 0)  # without pooling the last file counts, once

    def test_a_job_or_pipeline_given_twice_is_refused(self):
        bench = self.program("bench_nets", "sys.exit(3)")
        self.assertMessage(run("ab_builds.py", "--base", bench, "--new", bench, "LeNet:8", "AlexNet:8", "LeNet:8"),
                           "'LeNet:8' is given twice")
        self.assertMessage(run("train_vs_pytorch.py", "--pipelines", "tensors,tensors"), "tensors is given twice",
                           status=2)
        self.assertNeverRan()


class DataVsPytorch(Folder):
    def test_a_failed_or_unpaired_benchmark_is_named(self):
        load = "ImageFolder/load/3x224x224/training"
        loader = "ImageFolder/loader/3x224x224/training/workers:1"
        self.write("glassbox.json", {"benchmarks": [{"name": load + "/real_time", "images/s": 200.0},
                                                    {"name": loader + "/real_time", "images/s": 300.0}]})
        self.write("pytorch.json", {"benchmarks": [
            {"name": load, "images/s": 100.0},
            {"name": loader, "images/s": 0, "error_occurred": True, "error_message": "worker died"}]})
        writes = ("out = next((a.split('=', 1)[1] for a in sys.argv if a.startswith('--benchmark_out=')), None)\n"
                  "side = 'glassbox' if out else 'pytorch'\nout = out or sys.argv[sys.argv.index('--json') + 1]\n"
                  f"open(out, 'w').write(open(os.path.join({self.dir!r}, side + '.json')).read())")
        program = self.program("side", writes)
        code, out, err = run("data_vs_pytorch.py", "--bench-data", program, "--python", program, "--folder", self.dir,
                             "--rounds", "1")
        self.assertEqual(code, 0, err)
        self.assertIn(f"pytorch's {loader} failed in round 1, left out of it: worker died", err)
        self.assertTrue(any(ln.startswith(load) and ln.split()[-1] == "2.00" for ln in out.splitlines()), out)
        self.assertIn(f"only Glassbox measured, so no ratio: {loader}", out)


class StoredTables(unittest.TestCase):
    def test_each_stored_table_json_makes_its_table_md(self):
        made = 0
        for path in sorted(glob.glob(os.path.join(BENCH, "results", "*", "table*.json"))):
            markdown = path[:-len(".json")] + ".md"
            with open(markdown) as f:
                stored = f.read()
            if "bench/ratio_table.py --out" not in stored.splitlines()[0]:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "table.md")
                code, _, err = run("ratio_table.py", "--out", out, path)
                self.assertEqual((code, err), (0, ""), path)
                with open(out) as f:
                    remade = f.read()
            self.assertEqual(remade.split("\n", 1)[1], stored.split("\n", 1)[1], path)
            made += 1
        self.assertGreaterEqual(made, 5)


if __name__ == "__main__":
    unittest.main()
