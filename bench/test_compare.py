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
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
COMPARE = os.path.join(HERE, "compare.py")
RESULTS = os.path.join(HERE, "results")
H100 = os.path.join(RESULTS, "h100-80gb", "table.json")
EPYC = os.path.join(RESULTS, "epyc-zen5-2core", "table.json")


def run(*args):
    done = subprocess.run([sys.executable, COMPARE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
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
    "fp16": "fp16 (mixed, dynamic loss scaling)",
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


if __name__ == "__main__":
    unittest.main()
