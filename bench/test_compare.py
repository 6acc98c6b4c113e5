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


if __name__ == "__main__":
    unittest.main()
