#!/usr/bin/env python3
"""bench/test_compare.py: bench/compare.py on the stored results, no torch and
no build needed.

    python3 -m unittest bench/test_compare.py      (or: python3 bench/test_compare.py)

- One results file (the H100's table, written by compare.py --out) prints as
  a table: every benchmark of it, with its ratio, and no warning that the two
  sides' precision (or device) differs: both spell fp32 as Glassbox does, and
  the peer's older spelling reads as that.
- Two files compare as before; one side alone prints that side.
- Mixed precision: the peer names and spells bf16 and fp16 as Glassbox does
  (names ending in /bf16 and /fp16, the context's precision strings, which
  tensor/context.cpp writes), so the rows pair with no warning; a bf16 run
  beside an fp16 one is warned about.
- The peer's torch.compile rows (/compiled, after any /channels_last) pair
  with Glassbox's row of the name without the suffix, each on a line of its
  own after that row, against the faster compiled layout.
- An interleaved table (bench/merge_results.py's) prints its rows.
- bench/thread_scaling.py divides each side's images/s at more threads by
  its images/s at fewer, per benchmark, and says whether Glassbox's threads
  were fixed or fitted.
- interleave.py marks a row "busy" where other work ran around one of its
  measurements (Note [Idle before and after]), and only then; it records
  the environment variables that cap either side's instruction set, and
  its command without the machine's folders; a peer benchmark that fails
  (torch.compile without a C compiler, say) is named and recorded, and the
  run goes on without it.
- Names pair with Google Benchmark's /iterations:N removed (bench_nets
  --steps=N in older builds), in compare.py and interleave.py alike; a
  language model's rows pair on tokens/s; a name's failed run among good
  ones is said in the row's note; unequal thread counts are warned about,
  on stderr and under the table's heading, and the exit status stays 0.
- bench/merge_results.py keeps every record of a round (the loads that mark
  a row busy, the peer's torch.compile runs in each layout), the parts'
  environment and failed benchmarks; it stops, naming both files and what
  differs, where parts ran with other settings (--threads, a --glassbox-*
  option) or in another environment, but not where they differ only in the
  networks, batches, rounds or paths; the stored tables' parts agree; a
  benchmark only the peer measured is a row of its own, without a ratio.
  bench/ratio_table.py marks busy ratios and adds torch.compile's table.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
COMPARE = os.path.join(HERE, "compare.py")
MERGE = os.path.join(HERE, "merge_results.py")
RATIO_TABLE = os.path.join(HERE, "ratio_table.py")
RESULTS = os.path.join(HERE, "results")
H100 = os.path.join(RESULTS, "h100-80gb", "table.json")
EPYC = os.path.join(RESULTS, "epyc-zen5-2core", "table.json")


def run(*args, script=COMPARE):
    done = subprocess.run([sys.executable, script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    return done.returncode, done.stdout, done.stderr


class OneResultsFile(unittest.TestCase):
    def test_h100_table_prints_every_row_without_warnings(self):
        with open(H100) as f:
            stored = json.load(f)
        names = [row["name"] for row in stored["comparison"]]
        self.assertEqual(len(names), 16)  # LeNet, AlexNet, VGG16, ResNet50 in four modes
        code, out, err = run(H100)
        self.assertEqual(code, 0, err)
        self.assertNotIn("warning", err)
        self.assertNotIn("differs", out + err)
        self.assertIn("fp32 (TF32 off)", out)
        lines = out.splitlines()
        for row in stored["comparison"]:
            line = next((ln for ln in lines if ln.split(" ")[0] == row["name"]), None)
            self.assertIsNotNone(line, f"no row for {row['name']}")
            self.assertIn(f"{row['ratio_glassbox_over_pytorch']:.2f}", line.split())

    def test_old_precision_spelling_reads_as_glassbox_spelling(self):
        with open(H100) as f:
            stored = json.load(f)
        stored["pytorch"]["context"]["precision"] = "fp32, TF32 off"  # the peer's spelling before
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "results.json")
            with open(path, "w") as f:
                json.dump(stored, f)
            code, _, err = run(path)
            self.assertEqual(code, 0, err)
            self.assertNotIn("precision differs", err)
            stored["pytorch"]["context"]["precision"] = "tf32"
            with open(path, "w") as f:
                json.dump(stored, f)
            code, _, err = run(path)
            self.assertEqual(code, 0, err)
            self.assertIn("precision differs", err)

    def test_two_files_compare_and_one_side_prints_alone(self):
        with open(H100) as f:
            stored = json.load(f)
        with tempfile.TemporaryDirectory() as tmp:
            sides = {}
            for side in ("glassbox", "pytorch"):
                sides[side] = os.path.join(tmp, side + ".json")
                with open(sides[side], "w") as f:
                    json.dump(stored[side], f)
            out_file = os.path.join(tmp, "out.json")
            code, out, err = run(sides["glassbox"], sides["pytorch"], "--out", out_file)
            self.assertEqual(code, 0, err)
            self.assertNotIn("warning", err)
            with open(out_file) as f:
                written = json.load(f)
            self.assertEqual([r["name"] for r in written["comparison"]],
                             [r["name"] for r in stored["comparison"]])
            code, out, err = run(sides["glassbox"])
            self.assertEqual(code, 0, err)
            self.assertIn("ResNet50/train_step/batch:64", out)

    def test_interleaved_table_prints_its_rows(self):
        code, out, err = run(EPYC)
        self.assertEqual(code, 0, err)
        self.assertIn("8c3253f", out)
        self.assertIn("Xception/forward/batch:2", out)

    def test_bad_input_is_exit_status_2(self):
        code, _, err = run(os.path.join(RESULTS, "no-such-file.json"))
        self.assertEqual(code, 2)
        self.assertIn("cannot read", err)


GLASSBOX_PRECISION = {  # Glassbox's spelling in its bench_nets context (tensor/context.cpp)
    "fp32": "fp32 (TF32 off)",
    "tf32": "tf32",
    "bf16": "bf16 (mixed: 16-bit values, fp32 master weights and accumulation)",
    "fp16": "fp16 (mixed: 16-bit values, fp32 master weights and accumulation; a training step scales the loss)",
}


def entry(name, rate):
    return {"name": name, "run_name": name, "run_type": "iteration", "iterations": 10, "real_time": 64e3 / rate,
            "time_unit": "ms", "images/s": rate, "TFLOP/s": rate * 24.6e-3, "peak_memory": 2**30}


def side(precision, names_and_rates, peer):
    context = {"device": "cuda" if peer else "cuda:0", "device_name": "NVIDIA H200" + ("" if peer else " (sm_90)"),
               "precision": precision, ("torch" if peer else "commit"): "x"}
    return {"context": context, "benchmarks": [entry(name, rate) for name, rate in names_and_rates]}


class MixedPrecisionAndCompiled(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, os.path.join(HERE, "peers"))
        import peer_protocol
        self.peer = peer_protocol
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def compare(self, glassbox, pytorch):
        paths = [os.path.join(self.tmp.name, n) for n in ("glassbox.json", "pytorch.json", "out.json")]
        for path, data in zip(paths, (glassbox, pytorch)):
            with open(path, "w") as f:
                json.dump(data, f)
        code, out, err = run(*paths[:2], "--out", paths[2])
        with open(paths[2]) as f:
            return code, out, err, json.load(f)["comparison"]

    def test_the_peer_spells_each_precision_as_glassbox(self):
        self.assertEqual(self.peer.PRECISIONS, list(GLASSBOX_PRECISION))
        self.assertEqual(self.peer.CONTEXT_PRECISION, GLASSBOX_PRECISION)
        with open(os.path.join(HERE, os.pardir, "tensor", "context.cpp")) as f:
            source = f.read()
        for spelling in GLASSBOX_PRECISION.values():
            self.assertIn(json.dumps(spelling), source, "tensor/context.cpp spells a precision otherwise")

    def test_names_end_in_the_precision_then_the_layout_then_compiled(self):
        class Spec:
            name = "ResNet50"
        name = self.peer.benchmark_name
        self.assertEqual(name(Spec, "train_step", 64, "nchw"), "ResNet50/train_step/batch:64")
        self.assertEqual(name(Spec, "train_step", 64, "nchw", "tf32"), "ResNet50/train_step/batch:64/tf32")
        self.assertEqual(name(Spec, "forward", 64, "nchw", "bf16"), "ResNet50/forward/batch:64/bf16")
        self.assertEqual(name(Spec, "inference", 8, "channels_last", "fp16"),
                         "ResNet50/inference/batch:8/fp16/channels_last")
        self.assertEqual(name(Spec, "train_step", 64, "channels_last", "bf16", compiled=True),
                         "ResNet50/train_step/batch:64/bf16/channels_last/compiled")
        self.assertEqual(name(Spec, "train_step", 64, "nchw", compiled=True), "ResNet50/train_step/batch:64/compiled")

    def test_mixed_precision_rows_pair_without_warning(self):
        for precision in ("bf16", "fp16"):
            base = f"ResNet50/train_step/batch:64/{precision}"
            code, out, err, rows = self.compare(
                side(GLASSBOX_PRECISION[precision], [(base + "/manual_time", 2000.0)], peer=False),
                side(self.peer.CONTEXT_PRECISION[precision], [(base, 1600.0), (base + "/channels_last", 1800.0)],
                     peer=True))
            self.assertEqual(code, 0, err)
            self.assertNotIn("warning", err)
            self.assertEqual([r["name"] for r in rows], [base])
            self.assertAlmostEqual(rows[0]["ratio_glassbox_over_pytorch"], 2000.0 / 1800.0)
            self.assertIn(GLASSBOX_PRECISION[precision], out)

    def test_bf16_beside_fp16_is_warned_about(self):
        code, _, err, _ = self.compare(
            side(GLASSBOX_PRECISION["bf16"], [("LeNet/forward/batch:64/bf16", 10.0)], peer=False),
            side(GLASSBOX_PRECISION["fp16"], [("LeNet/forward/batch:64/bf16", 10.0)], peer=True))
        self.assertEqual(code, 0, err)
        self.assertIn("precision differs", err)

    def test_compiled_rows_pair_with_glassbox_row_of_the_name_without_the_suffix(self):
        train, infer = "ResNet50/train_step/batch:64/bf16", "ResNet50/inference/batch:64/bf16"
        code, out, err, rows = self.compare(
            side(GLASSBOX_PRECISION["bf16"], [(train + "/manual_time", 2000.0), (infer + "/manual_time", 6000.0)],
                 peer=False),
            side(GLASSBOX_PRECISION["bf16"], [
                (train, 1500.0), (train + "/channels_last", 1800.0),
                (train + "/compiled", 1900.0), (train + "/channels_last/compiled", 2500.0),
                (infer, 5000.0), (infer + "/compiled", 8000.0)], peer=True))
        self.assertEqual(code, 0, err)
        self.assertNotIn("warning", err)
        self.assertEqual([r["name"] for r in rows], [train, train + "/compiled", infer, infer + "/compiled"])
        self.assertEqual([r["pytorch_compiled"] for r in rows], [False, True, False, True])
        self.assertFalse(any("only in" in r["note"] for r in rows), rows)
        by_name = {r["name"]: r for r in rows}
        self.assertAlmostEqual(by_name[train]["ratio_glassbox_over_pytorch"], 2000.0 / 1800.0)
        self.assertAlmostEqual(by_name[train + "/compiled"]["ratio_glassbox_over_pytorch"], 2000.0 / 2500.0)
        self.assertEqual(by_name[train + "/compiled"]["glassbox_images_per_s"], 2000.0)
        self.assertIn("channels_last (nchw 1900 img/s)", by_name[train + "/compiled"]["note"])
        self.assertAlmostEqual(by_name[infer + "/compiled"]["ratio_glassbox_over_pytorch"], 6000.0 / 8000.0)
        lines = out.splitlines()
        line = next(ln for ln in lines if ln.split(" ")[0] == train + "/compiled")
        self.assertIn("0.80", line.split())
        self.assertIn("rows ending in /compiled", out)

    def test_a_compiled_row_without_glassbox_row_is_only_in_pytorch(self):
        code, _, err, rows = self.compare(
            side(GLASSBOX_PRECISION["fp16"], [("LeNet/forward/batch:64/fp16", 10.0)], peer=False),
            side(GLASSBOX_PRECISION["fp16"], [("LeNet/forward/batch:64/fp16", 9.0),
                                              ("VGG16/forward/batch:64/fp16/compiled", 5.0)], peer=True))
        self.assertEqual(code, 0, err)
        self.assertEqual([(r["name"], r["note"]) for r in rows], [
            ("LeNet/forward/batch:64/fp16", ""), ("VGG16/forward/batch:64/fp16/compiled", "only in PyTorch")])


class ThreadScaling(unittest.TestCase):
    @staticmethod
    def results(folder, name, threads, rates, extra=()):
        path = os.path.join(folder, name)
        rows = [{"name": n, "glassbox_images_per_s": g, "pytorch_images_per_s": p, "busiest_cpus": 1.0}
                for n, (g, p) in rates.items()]
        with open(path, "w") as f:
            json.dump({"command": ["bench/interleave.py", "--threads", str(threads), *extra], "rows": rows}, f)
        return path

    def test_each_side_is_divided_by_its_own_figure_at_fewer_threads(self):
        with tempfile.TemporaryDirectory() as folder:
            one = self.results(folder, "1.json", 1, {"LeNet/train_step/batch:64": (100.0, 50.0)})
            two = self.results(folder, "2.json", 2, {"LeNet/train_step/batch:64": (95.0, 30.0)})
            fixed = self.results(folder, "2f.json", 2, {"LeNet/train_step/batch:64": (40.0, 31.0)},
                                 ["--glassbox-fixed-threads"])
            out = os.path.join(folder, "t.md")
            r = subprocess.run([sys.executable, os.path.join(HERE, "thread_scaling.py"), one, two, fixed,
                                "--out", out], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("### 2 threads against 1; Glassbox's 2 fitted to the free cores", r.stdout)
            self.assertIn("| LeNet/train_step/batch:64 | 100.0 | 95.0 | 0.95 | 50.0 | 30.0 | 0.60 | 1.00 |", r.stdout)
            self.assertIn("### 2 threads against 1; Glassbox's 2 fixed (--fixed-threads)", r.stdout)
            self.assertIn("| 100.0 | 40.0 | 0.40 | 50.0 | 31.0 | 0.62 |", r.stdout)
            with open(out) as f:
                written = f.read()
            self.assertTrue(written.startswith("<!-- Made by `python3 bench/thread_scaling.py --out "), written)
            self.assertTrue(written.endswith(r.stdout), written)
            self.assertEqual(sorted(os.listdir(folder)), ["1.json", "2.json", "2f.json", "t.md"])

    def test_a_file_without_rows_is_exit_status_2(self):
        with tempfile.TemporaryDirectory() as folder:
            empty = os.path.join(folder, "e.json")
            with open(empty, "w") as f:
                f.write("{}")
            r = subprocess.run([sys.executable, os.path.join(HERE, "thread_scaling.py"), empty, empty],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 2)
            self.assertIn("e.json: not an interleave.py --json file with rows", r.stderr)


class IdleChecks(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, HERE)
        import interleave
        self.interleave = interleave

    def rounds(self, loads):
        """Two rounds of one benchmark; loads[r] is round r's {side: busy CPUs}."""
        name = "LeNet/train_step/batch:64"
        return [{"glassbox": {name: 100.0 + r}, "pytorch": {name: 90.0, name + "/channels_last": 80.0},
                 "load": {side: {n: load for n in ([name] if side == "glassbox" else [name, name + "/channels_last"])}
                          for side, load in loads[r].items()}} for r in range(2)]

    def test_a_row_is_busy_where_any_measurement_saw_other_work(self):
        quiet = self.interleave.rows_from_rounds(self.rounds([{"glassbox": 0.05, "pytorch": 0.1}] * 2), ["LeNet"])
        self.assertEqual(quiet[0]["busy"], False)
        self.assertEqual(quiet[0]["busiest_cpus"], 0.1)
        busy = self.interleave.rows_from_rounds(
            self.rounds([{"glassbox": 0.05, "pytorch": 0.1}, {"glassbox": 0.02, "pytorch": 1.4}]), ["LeNet"])
        self.assertEqual(busy[0]["busy"], True)
        self.assertEqual(busy[0]["busiest_cpus"], 1.4)
        self.assertEqual(busy[0]["ratio"], 100.5 / 90.0)

    def test_a_row_adds_the_ratio_to_torch_compile_where_it_ran(self):
        name = "ResNet50/train_step/batch:256/bf16"
        rounds = [{"glassbox": {name: 3000.0}, "pytorch": {
            name: 2000.0, name + "/channels_last": 2400.0, name + "/compiled": 2500.0,
            name + "/channels_last/compiled": 2800.0}} for _ in range(2)]
        row = self.interleave.rows_from_rounds(rounds, ["ResNet50"])[0]
        self.assertEqual(row["pytorch_images_per_s"], 2400.0)
        self.assertEqual(row["ratio"], 1.25)
        self.assertEqual(row["pytorch_compiled_images_per_s"], 2800.0)
        self.assertAlmostEqual(row["ratio_compiled"], 3000.0 / 2800.0)
        eager = self.interleave.rows_from_rounds([{"glassbox": {name: 1.0}, "pytorch": {name: 1.0}}], ["ResNet50"])
        self.assertNotIn("ratio_compiled", eager[0])

    def test_the_variables_that_cap_the_kernels_are_recorded(self):
        environ = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "HOME": "/root", "PATH": "/bin"}
        self.assertEqual(self.interleave.recorded_environment(environ),
                         {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"})
        self.assertEqual(self.interleave.recorded_environment({"PATH": "/bin"}), {})
        self.assertEqual(self.interleave.recorded_command(
            ["bench/interleave.py", "--python", "/opt/venv/bin/python", "--bench", "build/bench_nets"]),
            ["bench/interleave.py", "--python", "bin/python", "--bench", "build/bench_nets"])

    def test_a_peer_benchmark_that_failed_is_named_and_the_run_goes_on(self):
        import contextlib
        import io
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "p.json")
            rows = [{"name": "ResNet50/train_step/batch:256/bf16/compiled", "error_occurred": True,
                     "error_message": "RuntimeError: Failed to find C compiler"},
                    {"name": "ResNet50/train_step/batch:256/bf16", "images/s": 2000.0}]
            writes = f"import json, sys; json.dump({{'benchmarks': {rows!r}}}, open({out!r}, 'w')); sys.exit(1)"
            del self.interleave.FAILED_BENCHMARKS[:]
            printed = io.StringIO()
            with contextlib.redirect_stderr(printed):
                self.interleave.run([sys.executable, "-c", writes], dict(os.environ), out)
            self.assertIn("ResNet50/train_step/batch:256/bf16/compiled failed, the run goes on without it: "
                          "RuntimeError: Failed to find C compiler", printed.getvalue())
            self.assertEqual(self.interleave.failed_benchmarks(), {"failed_benchmarks": [
                {"name": "ResNet50/train_step/batch:256/bf16/compiled",
                 "error_message": "RuntimeError: Failed to find C compiler"}]})
            self.assertEqual(self.interleave.benchmark_rates(rows), {"ResNet50/train_step/batch:256/bf16": 2000.0})
            del self.interleave.FAILED_BENCHMARKS[:]
            # Exit 1 with no failed row, or any other failure, still stops the run.
            clean = f"import json, sys; json.dump({{'benchmarks': []}}, open({out!r}, 'w')); sys.exit(1)"
            with self.assertRaises(SystemExit):
                self.interleave.run([sys.executable, "-c", clean], dict(os.environ), out)
            with self.assertRaises(SystemExit):
                self.interleave.run([sys.executable, "-c", "import sys; sys.exit(2)"], dict(os.environ), out)
            self.assertEqual(self.interleave.failed_benchmarks(), {})

    def test_rounds_without_loads_are_not_marked(self):
        rows = self.interleave.rows_from_rounds(self.rounds([{}, {}]), ["LeNet"])
        self.assertNotIn("busy", rows[0])

    def test_the_table_says_which_rows_were_busy(self):
        import contextlib
        import io
        rows = self.interleave.rows_from_rounds(self.rounds([{"glassbox": 2.0, "pytorch": 0.0}] * 2), ["LeNet"])
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            self.interleave.print_rows(rows, ["heading"])
        self.assertIn("busy (2.0 CPUs of other work)", printed.getvalue())
        self.assertIn("1 row measured beside other work", printed.getvalue())

    def test_busy_cpus_reads_the_machine(self):
        load = self.interleave.busy_cpus(0.2)
        self.assertIsNotNone(load)
        self.assertGreaterEqual(load, 0.0)
        self.assertLessEqual(load, (os.cpu_count() or 1) + 1e-9)
        self.assertIsNone(self.interleave.busy_cpus(0))


class WithJsonFiles(unittest.TestCase):
    """A temporary folder per test, and write() to put a JSON file in it."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, data):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            json.dump(data, f)
        return path


class NamesUnitsThreadsAndFailedRuns(WithJsonFiles):
    @staticmethod
    def cpu(threads, peer):
        context = {"device": "cpu", "device_name": "AMD EPYC", "precision": GLASSBOX_PRECISION["fp32"]}
        context.update({"torch": "2.x", "torch_num_threads": threads} if peer else
                       {"commit": "x", "cpu_threads": str(threads)})
        return context

    def test_iterations_suffix_is_dropped_when_pairing(self):
        glassbox = {"context": self.cpu(1, False), "benchmarks": [
            entry("LeNet/forward/batch:64/iterations:20", 300.0),
            entry("LeNet/train_step/batch:64/iterations:20/manual_time", 140.0)]}
        pytorch = {"context": self.cpu(1, True), "benchmarks": [
            entry("LeNet/forward/batch:64", 150.0), entry("LeNet/train_step/batch:64", 70.0)]}
        code, out, err = run(self.write("g.json", glassbox), self.write("p.json", pytorch))
        self.assertEqual(code, 0, err)
        self.assertNotIn("only in", out)
        line = next(ln for ln in out.splitlines() if ln.startswith("LeNet/forward/batch:64 "))
        self.assertIn("2.00", line.split())
        sys.path.insert(0, HERE)
        import interleave
        self.assertEqual(interleave.benchmark_rates(glassbox["benchmarks"]),
                         {"LeNet/forward/batch:64": 300.0, "LeNet/train_step/batch:64": 140.0})

    def test_a_language_model_pairs_on_tokens_per_second(self):
        def tokens(name, rate):
            found = entry(name, 1.0)
            del found["images/s"]
            found["tokens/s"] = rate
            return found
        name = "LSTMSmall/train_step/batch:32"
        out_file = os.path.join(self.tmp.name, "out.json")
        sides = [self.write(f"{side}.json", {"context": self.cpu(2, side == "p"), "benchmarks": [tokens(name, rate)]})
                 for side, rate in (("g", 5000.0), ("p", 2500.0))]
        code, out, err = run(*sides, "--out", out_file)
        self.assertEqual(code, 0, err)
        line = next(ln for ln in out.splitlines() if ln.startswith(name))
        self.assertEqual(line.split()[1:4], ["5000", "2500", "2.00"])
        self.assertTrue(line.endswith("tokens/s"), line)
        with open(out_file) as f:
            row, = json.load(f)["comparison"]
        self.assertEqual((row["unit"], row["ratio_glassbox_over_pytorch"]), ("tokens/s", 2.0))

    def test_unequal_thread_counts_are_warned_about_and_the_exit_status_stays(self):
        name = "LeNet/forward/batch:64"
        paths = [self.write(f"{side}.json", {"context": self.cpu(threads, side != "g"),
                                             "benchmarks": [entry(name, 100.0)]})
                 for side, threads in (("g", 2), ("p", 1), ("p1", 2))]
        code, out, err = run(paths[0], paths[1])
        self.assertEqual(code, 0, err)
        warning = "thread counts differ: Glassbox 2 (cpu_threads), PyTorch 1 (torch_num_threads)"
        self.assertIn(warning, err)
        self.assertIn(warning, out)
        self.assertIn("fp32 (TF32 off), 2 threads", out)
        self.assertIn("fp32 (TF32 off), 1 thread", out)
        code, out, err = run(paths[0], paths[2])
        self.assertEqual(code, 0, err)
        self.assertNotIn("thread counts differ", out + err)

    def test_a_failed_run_among_good_ones_is_said(self):
        name = "LeNet/forward/batch:64"
        failed = dict(entry(name, 1.0), error_occurred=True, error_message="loss not finite at step 3")
        glassbox = self.write("g.json", {"context": self.cpu(2, False), "benchmarks": [
            entry(name, 200.0), failed, entry(name, 100.0)]})
        code, out, err = run(glassbox, self.write("p.json", {"context": self.cpu(2, True),
                                                             "benchmarks": [entry(name, 100.0)]}))
        self.assertEqual(code, 0, err)
        line = next(ln for ln in out.splitlines() if ln.startswith(name))
        self.assertIn("1.50", line.split())
        self.assertIn("Glassbox: 1 of 3 runs failed (loss not finite at step 3), the mean is of the others", line)
        code, out, err = run(glassbox)
        self.assertEqual(code, 0, err)
        self.assertIn("1 of 3 runs failed", out)


def interleaved(command, rounds, **fields):
    """A bench/interleave.py --json file's contents: its command, rounds and rows."""
    sys.path.insert(0, HERE)
    import interleave
    nets = list(dict.fromkeys(n.split("/")[0] for rnd in rounds for n in rnd["glassbox"]))
    data = {"date": "2026-12-05T00:00:00", "command": ["bench/interleave.py", *command], "machine": "M",
            "environment": {}, "builds": {"glassbox": "abc", "pytorch": "2.x"}, "rounds": rounds}
    data.update(fields)
    data["rows"] = interleave.rows_from_rounds(rounds, nets)
    return data


RESNET = "ResNet50/train_step/batch:8"


def resnet_round(rate, busy=0.0):
    """One round of RESNET with every record interleave.py --pytorch-compile keeps."""
    return {"glassbox": {RESNET: rate},
            "pytorch": {RESNET: 80.0, RESNET + "/channels_last": 90.0, RESNET + "/compiled": 120.0,
                        RESNET + "/channels_last/compiled": 110.0},
            "load": {"glassbox": {RESNET: busy},
                     "pytorch": {RESNET: 0.0, RESNET + "/channels_last": 0.0, RESNET + "/compiled": 0.0,
                                 RESNET + "/channels_last/compiled": 0.0}}}


class MergeResults(WithJsonFiles):
    def merge(self, *args, out="merged.json"):
        out = os.path.join(self.tmp.name, out)
        if os.path.exists(out):
            os.remove(out)
        code, stdout, err = run("--out", out, *args, script=MERGE)
        if code != 0:
            self.assertFalse(os.path.exists(out), "a refused merge wrote its file")
            return code, err, None
        with open(out) as f:
            return code, err, json.load(f)

    def test_every_record_of_a_round_the_environment_and_failures_are_kept(self):
        failure = {"name": RESNET + "/channels_last/compiled", "error_message": "RuntimeError: no C compiler"}
        lenet = "LeNet/forward/batch:64"
        first = self.write("a.json", interleaved(
            ["--threads", "2", "--pytorch-compile", "--json", "a.json", "ResNet50"],
            [resnet_round(100.0, busy=1.5), resnet_round(104.0), resnet_round(98.0)],
            environment={"ONEDNN_MAX_CPU_ISA": "AVX2"}, failed_benchmarks=[failure]))
        # Glassbox's LeNet failed here: the peer's figure alone is kept too.
        second = self.write("b.json", interleaved(
            ["--threads", "2", "--pytorch-compile", "LeNet"],
            [{"glassbox": {}, "pytorch": {lenet: 50.0, lenet + "/compiled": 60.0},
              "load": {"glassbox": {}, "pytorch": {lenet: 0.1, lenet + "/compiled": 0.1}}}],
            environment={"ONEDNN_MAX_CPU_ISA": "AVX2"}, failed_benchmarks=[failure]))
        code, err, merged = self.merge(first, second)
        self.assertEqual(code, 0, err)
        with open(first) as f:
            part = json.load(f)
        self.assertEqual(merged["rounds"][0]["glassbox"], part["rounds"][0]["glassbox"])
        self.assertEqual(merged["rounds"][0]["pytorch"], dict(part["rounds"][0]["pytorch"], **{lenet: 50.0,
                                                                                          lenet + "/compiled": 60.0}))
        self.assertEqual(merged["rounds"][0]["load"]["glassbox"], {RESNET: 1.5})
        self.assertEqual(merged["rounds"][1]["load"]["pytorch"], part["rounds"][1]["load"]["pytorch"])
        row, peer_only = merged["rows"]
        self.assertEqual(row, part["rows"][0])
        self.assertEqual((row["busy"], row["pytorch_compiled_images_per_s"]), (True, 120.0))
        self.assertEqual((peer_only["name"], peer_only["glassbox_images_per_s"], peer_only["pytorch_images_per_s"],
                          peer_only["ratio"]), (lenet, None, 50.0, None))
        self.assertEqual(merged["environment"], {"ONEDNN_MAX_CPU_ISA": "AVX2"})
        self.assertEqual(merged["failed_benchmarks"], [dict(failure, part=0), dict(failure, part=1)])
        code, out, err = run(os.path.join(self.tmp.name, "merged.json"))
        self.assertEqual(code, 0, err)
        self.assertIn("torch.compile 120.0, ratio 0.83  busy (1.5 CPUs of other work)", out)
        # A merged file merged again (as a part) is the same table.
        code, err, again = self.merge(os.path.join(self.tmp.name, "merged.json"), out="again.json")
        self.assertEqual(code, 0, err)
        self.assertEqual((again["rounds"], again["rows"], again["environment"], again["failed_benchmarks"]),
                         (merged["rounds"], merged["rows"], merged["environment"], merged["failed_benchmarks"]))

    def test_ratio_table_marks_busy_ratios_and_adds_torch_compile(self):
        rounds = [resnet_round(100.0, busy=1.5), resnet_round(104.0), resnet_round(98.0)]
        part = self.write("a.json", interleaved(["--pytorch-compile", "ResNet50"], rounds))
        code, out, err = run("--below", "1.2", part, script=RATIO_TABLE)
        self.assertEqual(code, 0, err)
        lines = out.splitlines()
        self.assertIn("| ResNet50 | 8 |  |  | 1.11 (busy) |  |  |", lines)
        self.assertIn("Against PyTorch under torch.compile (the better of its layouts compiled):", lines)
        self.assertIn("| ResNet50 | 8 |  |  | 0.83 (busy) |  |", lines)
        self.assertIn("1 of 1 rows measured beside other work, marked (busy)", out)
        self.assertIn(f"- {RESNET}: 1.11 (rounds: 1.11, 1.16, 1.09; PyTorch channels_last; torch.compile 0.83; "
                      "busy (1.5 CPUs of other work))", lines)
        quiet = self.write("q.json", interleaved(["ResNet50"], [{"glassbox": {RESNET: 100.0},
                                                                 "pytorch": {RESNET: 80.0}}]))
        code, out, err = run(quiet, script=RATIO_TABLE)
        self.assertEqual(code, 0, err)
        self.assertNotIn("busy", out)
        self.assertNotIn("torch.compile", out)

    def test_parts_with_other_settings_stop_the_merge(self):
        rounds = [resnet_round(100.0)]
        one = self.write("one-thread.json", interleaved(["--threads", "1", "ResNet50"], rounds))
        two = self.write("two-threads.json", interleaved(["--threads", "2", "ResNet50"], rounds))
        code, err, _ = self.merge("--pool-rounds", one, two)
        self.assertEqual(code, 1)
        self.assertIn(f"{one} and {two} ran with different settings, not one table: "
                      f"--threads: 1 in {one}, 2 in {two}", err)
        no_fusion = self.write("no-fusion.json", interleaved(["--glassbox-no-fusion", "ResNet50"], rounds))
        code, err, _ = self.merge(two, no_fusion)
        self.assertEqual(code, 1)
        self.assertIn(f"--glassbox-no-fusion: not given in {two}, given in {no_fusion}", err)
        # The default left out reads as given; networks, batches, rounds and paths may differ.
        other = self.write("other.json", interleaved(
            ["--bench", "b/bench_nets", "--python", "venv/python", "--rounds", "5", "--batch", "1x,4x", "--modes",
             "train_step", "--json", "x/other.json", "--idle-check", "1", "VGG16", "LeNet"],
            [{"glassbox": {"VGG16/train_step/batch:4": 10.0}, "pytorch": {"VGG16/train_step/batch:4": 9.0}}]))
        code, err, merged = self.merge(two, other)
        self.assertEqual(code, 0, err)
        self.assertEqual(len(merged["rows"]), 2)

    def test_parts_of_other_builds_or_machines_stop_the_merge_naming_the_files(self):
        rounds = [resnet_round(100.0)]
        first = self.write("first.json", interleaved(["ResNet50"], rounds))
        rebuilt = self.write("rebuilt.json", interleaved(["ResNet50"], rounds, builds={"glassbox": "def",
                                                                                       "pytorch": "2.x"}))
        code, err, _ = self.merge(first, rebuilt)
        self.assertEqual(code, 1)
        self.assertIn(f"different builds, not one table: {first}: Glassbox abc, PyTorch 2.x; "
                      f"{rebuilt}: Glassbox def, PyTorch 2.x", err)
        elsewhere = self.write("elsewhere.json", interleaved(["ResNet50"], rounds, machine="N"))
        code, err, _ = self.merge(first, elsewhere)
        self.assertEqual(code, 1)
        self.assertIn(f"different machines (or some recorded none; --machine names it for those): {first}: M; "
                      f"{elsewhere}: N", err)

    def test_parts_in_other_environments_stop_the_merge(self):
        rounds = [resnet_round(100.0)]
        avx2 = self.write("avx2.json", interleaved(["ResNet50"], rounds, environment={"ONEDNN_MAX_CPU_ISA": "AVX2"}))
        full = self.write("full.json", interleaved(["ResNet50"], rounds))
        code, err, _ = self.merge(avx2, full)
        self.assertEqual(code, 1)
        self.assertIn(f"{avx2} and {full} ran in different environments", err)
        self.assertIn(f"ONEDNN_MAX_CPU_ISA: AVX2 in {avx2}, unset in {full}", err)
        older = interleaved(["ResNet50"], rounds)
        del older["environment"]  # interleave.py before it recorded one
        older = self.write("older.json", older)
        code, err, _ = self.merge(older, avx2)
        self.assertEqual(code, 1)
        self.assertIn(f"{older} recorded none", err)
        self.assertIn("--environment", err)
        code, err, merged = self.merge("--environment", "ONEDNN_MAX_CPU_ISA=AVX2", older, avx2)
        self.assertEqual(code, 0, err)
        self.assertEqual(merged["environment"], {"ONEDNN_MAX_CPU_ISA": "AVX2"})
        self.assertEqual(merged["command"][1:3], ["--environment", "ONEDNN_MAX_CPU_ISA=AVX2"])
        code, err, merged = self.merge(older, older)
        self.assertEqual(code, 0, err)
        self.assertNotIn("environment", merged)

    def test_the_stored_tables_parts_agree(self):
        sys.path.insert(0, HERE)
        import merge_results
        stored = [os.path.join(RESULTS, folder, name) for folder in sorted(os.listdir(RESULTS))
                  if os.path.isdir(os.path.join(RESULTS, folder))
                  for name in sorted(os.listdir(os.path.join(RESULTS, folder))) if name.startswith("table")
                  and name.endswith(".json")]
        merged = 0
        for path in stored:
            with open(path) as f:
                data = json.load(f)
            if "parts" not in data:
                continue
            merged += 1
            found = [merge_results.settings(part["command"]) for part in data["parts"]]
            self.assertNotIn(None, found, path)
            merge_results.check_one_table([(f"{path} part {i}", s, data.get("environment"))
                                           for i, s in enumerate(found)])
        self.assertGreaterEqual(merged, 5)


if __name__ == "__main__":
    unittest.main()
