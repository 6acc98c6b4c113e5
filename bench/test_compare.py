#!/usr/bin/env python3
"""bench/test_compare.py: bench/compare.py on the stored results, no torch and
no build needed.

    python3 -m unittest bench/test_compare.py      (or: python3 bench/test_compare.py)

- One results file (the H100's table, written by compare.py --out) prints as
  a table: every benchmark of it, with its ratio, and no warning that the two
  sides' precision (or device) differs: both spell fp32 as Glassbox does, and
  the peer's older spelling reads as that.
- Two files compare as before; one side alone prints that side.
- An interleaved table (bench/merge_results.py's) prints its rows.
- interleave.py marks a row "busy" where other work ran around one of its
  measurements (Note [Idle before and after]), and only then.
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
