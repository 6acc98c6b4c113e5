#!/usr/bin/env python3
"""bench/peers/test_checkpoint_round_trip.py: the parts of
checkpoint_round_trip.py that need neither torch nor a glassbox build:
choosing networks and parts, reading glassbox eval's output, comparing
logits, reading IDX files, the table, finding the program.

    python3 bench/peers/test_checkpoint_round_trip.py      # any Python 3 (numpy for the IDX test)
"""

import argparse
import contextlib
import gzip
import io
import os
import re
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checkpoint_round_trip as rt  # noqa: E402


class SelectTest(unittest.TestCase):
    def test_nets_by_any_case_in_peer_spelling(self):
        self.assertEqual(rt.select_nets("resnet50, alexnet"), ["ResNet50", "AlexNet"])
        self.assertEqual(rt.select_nets("all"), rt.NET_NAMES)
        self.assertIn("InceptionV3", rt.select_nets("ALL"))

    def test_unknown_or_no_nets_are_usage_errors(self):
        with self.assertRaisesRegex(rt.UsageError, "unknown network 'ResNet51'; known: LeNet, AlexNet"):
            rt.select_nets("ResNet51")
        with self.assertRaisesRegex(rt.UsageError, "names no network"):
            rt.select_nets(" , ")

    def test_mlp_specs_keep_their_commas(self):
        self.assertEqual(rt.select_nets("resnet50,mlp:784,256,10,LeNet"), ["ResNet50", "MLP:784,256,10", "LeNet"])
        self.assertEqual(rt.select_nets("MLP:20,2"), ["MLP:20,2"])
        self.assertEqual(rt.select_nets("MLP:20,2, MLP:784,10"), ["MLP:20,2", "MLP:784,10"])

    def test_an_mlp_takes_glassboxs_image_shape(self):
        self.assertEqual(rt.net_of("MLP:784,256,10").sample, (1, 28, 28))
        self.assertEqual(rt.net_of("mlp:20,5,2").sample, (20, 1, 1))
        self.assertEqual(rt.net_of("mlp:20,5,2").sizes, [20, 5, 2])
        self.assertEqual(rt.file_stem("MLP:784,256,10"), "MLP-784-256-10")

    def test_a_bad_mlp_spec_is_a_usage_error(self):
        for bad in ("MLP:784", "MLP:784,,10", "MLP:784,x,10", "MLP:", "MLP:-5,10", "MLP:784,1e3"):
            with self.subTest(spec=bad), self.assertRaisesRegex(rt.UsageError, "is no MLP spec"):
                rt.select_nets(bad)

    def test_parts(self):
        self.assertEqual(rt.select_parts("3,1"), [1, 3])
        self.assertEqual(rt.select_parts("1,2,3"), [1, 2, 3])
        with self.assertRaisesRegex(rt.UsageError, "--parts takes 1, 2 and 3"):
            rt.select_parts("4")
        with self.assertRaises(rt.UsageError):
            rt.select_parts("")

    def test_default_nets_are_torchvisions(self):
        self.assertEqual(rt.select_nets(",".join(rt.DEFAULT_NETS)), rt.DEFAULT_NETS)


class ParseTest(unittest.TestCase):
    OUTPUT = ("LeNet on the test set of fashion-mnist: 10,000 images\n"
              "accuracy: 0.8765 (8765 of 10000)\nloss: 0.3456\ntime: 1.20 s (8,333 images/s; waiting for data 0.01 s)\n")

    def test_accuracy_and_loss(self):
        self.assertEqual(rt.parse_accuracy(self.OUTPUT), (0.8765, 8765, 10000))
        self.assertEqual(rt.parse_loss(self.OUTPUT), 0.3456)
        self.assertEqual(rt.parse_accuracy("accuracy: 1.0000 (10,000 of 10,000)"), (1.0, 10000, 10000))

    def test_missing_lines_fail_the_check(self):
        with self.assertRaisesRegex(rt.StepFailed, "no 'accuracy: A"):
            rt.parse_accuracy("loss: 0.1\n")
        with self.assertRaisesRegex(rt.StepFailed, "no 'loss: L'"):
            rt.parse_loss("accuracy: 0.5 (1 of 2)\n")
        self.assertTrue(rt.parse_loss("loss: nan\n") != rt.parse_loss("loss: nan\n"))  # NaN is read, and fails later


class LogitsTest(unittest.TestCase):
    def test_absolute_and_relative_to_the_largest_logit(self):
        worst, relative = rt.logits_difference([[1.0, -4.0], [2.0, 0.0]], [[1.0, -4.0005], [2.0, 0.0001]])
        self.assertAlmostEqual(worst, 5e-4)
        self.assertAlmostEqual(relative, 5e-4 / 4.0005)

    def test_identical_and_zero(self):
        self.assertEqual(rt.logits_difference([[0.0]], [[0.0]]), (0.0, 0.0))
        self.assertEqual(rt.logits_difference([[1.0]], [[0.0]]), (1.0, float("inf")))

    def test_shapes_must_agree(self):
        with self.assertRaisesRegex(rt.StepFailed, "logits of different shapes"):
            rt.logits_difference([[1.0, 2.0]], [[1.0], [2.0]])


class IdxTest(unittest.TestCase):
    def test_reads_gzip_idx(self):
        try:
            import numpy  # noqa: F401
        except ImportError:
            self.skipTest("numpy is not installed")
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "x-idx3-ubyte.gz")
            with gzip.open(path, "wb") as f:
                f.write(bytes([0, 0, 8, 3]) + struct.pack(">3I", 2, 2, 3) + bytes(range(12)))
            array = rt.read_idx(path)
            self.assertEqual(array.shape, (2, 2, 3))
            self.assertEqual(int(array[1, 1, 2]), 11)
            bad = os.path.join(folder, "bad")
            with open(bad, "wb") as f:
                f.write(b"\x00\x00\x0d\x01\x00\x00\x00\x01")
            with self.assertRaisesRegex(rt.StepFailed, "not an IDX file of unsigned bytes"):
                rt.read_idx(bad)


class ReportTest(unittest.TestCase):
    def test_table_aligns_columns(self):
        text = rt.table([("Glassbox -> PyTorch", "ResNet50", "PASS", "abs 1e-05"),
                         ("accuracy (Fashion-MNIST)", "LeNet", "FAIL", "PyTorch 0.85")])
        lines = text.splitlines()
        self.assertTrue(lines[0].startswith("check"))
        self.assertEqual(lines[2].index("ResNet50"), lines[3].index("LeNet"))
        self.assertEqual(lines[2].index("PASS"), lines[3].index("FAIL"))

    def test_missing_program_is_a_usage_error(self):
        with self.assertRaisesRegex(rt.UsageError, "no glassbox program at /nowhere/glassbox"):
            rt.find_glassbox("/nowhere/glassbox")

    def test_usage_errors_exit_2_before_torch_is_needed(self):
        self.assertEqual(rt.main(["--nets", "NoSuchNet"]), 2)
        self.assertEqual(rt.main(["--parts", "9"]), 2)


class SettingsTest(unittest.TestCase):
    def test_threads_tolerance_and_work_folder_are_checked(self):
        def settings(**changes):
            return argparse.Namespace(**{"tolerance": 1e-4, "threads": 2, "work": None, **changes})

        with tempfile.TemporaryDirectory() as folder:
            a_file = os.path.join(folder, "a-file")
            open(a_file, "w").close()
            for args, message in ((settings(threads=0), "--threads must be 1 or more, got 0"),
                                  (settings(tolerance=float("nan")), "--tolerance must be a finite number, 0 or more, "
                                                                     "got nan"),
                                  (settings(tolerance=-1e-4), "--tolerance must be a finite number"),
                                  (settings(tolerance=float("inf")), "--tolerance must be a finite number"),
                                  (settings(work=a_file), f"--work {a_file} is a file, not a folder")):
                with self.subTest(args=args):
                    with self.assertRaisesRegex(rt.UsageError, re.escape(message)):
                        rt.check_settings(args)
            rt.check_settings(settings(tolerance=0.0, threads=1, work=folder))
            rt.check_settings(settings(work=os.path.join(folder, "new")))

    def test_bad_settings_exit_2_before_torch_is_needed(self):
        # A glassbox program that exists (any executable), so that only the settings can stop the run.
        with tempfile.TemporaryDirectory() as folder:
            a_file = os.path.join(folder, "a-file")
            open(a_file, "w").close()
            for flags in (["--threads", "0"], ["--tolerance", "nan"], ["--tolerance", "-1"], ["--work", a_file]):
                with self.subTest(flags=flags):
                    stderr = io.StringIO()
                    with contextlib.redirect_stderr(stderr):
                        status = rt.main(["--glassbox", sys.executable, "--nets", "LeNet", "--parts", "2"] + flags)
                    self.assertEqual(status, 2)
                    self.assertEqual(len(stderr.getvalue().splitlines()), 1, stderr.getvalue())
                    self.assertTrue(stderr.getvalue().startswith(f"{rt.PROG}: --"), stderr.getvalue())


if __name__ == "__main__":
    unittest.main()
