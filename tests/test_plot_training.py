#!/usr/bin/env python3
"""tests/test_plot_training.py: tools/plot_training.py's reading of training
logs (the lines tools/cli/training_log.cpp writes) and its errors. The drawing
needs matplotlib, which Glassbox never needs: the logs and --out are checked
before it is imported, so everything here but one test runs without it."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "plot_training.py")
spec = importlib.util.spec_from_file_location("plot_training", TOOL)
plot_training = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot_training)
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def epoch(n, global_step, loss, accuracy, **more):
    line = {"event": "epoch", "epoch": n, "epochs": 4, "global_step": global_step, "lr": 0.1, "train_loss": loss,
            "train_accuracy": accuracy, "test_loss": loss + 0.1, "test_accuracy": accuracy - 0.01}
    line.update(more)
    return json.dumps(line)


def step(global_step, loss):
    return json.dumps({"event": "step", "epoch": 1 + (global_step - 1) // 4, "step": global_step,
                       "global_step": global_step, "loss": loss, "lr": 0.1, "images_per_second": 100.0})


# Four steps an epoch, a step line for each. The first run is killed two steps
# into epoch 3, mid-line; the resumed run starts again from epoch 2's checkpoint.
RESUMED = ([json.dumps({"event": "start", "net": "LeNet"})] + [step(s, 3.0 - 0.1 * s) for s in range(1, 5)]
           + [epoch(1, 4, 2.5, 0.3)] + [step(s, 3.0 - 0.1 * s) for s in range(5, 9)] + [epoch(2, 8, 2.0, 0.5)]
           + [step(9, 9.0), step(10, 9.0), '{"event": "step", "epo']
           + [json.dumps({"event": "start", "net": "LeNet", "resume": "run"})]
           + [step(s, 2.0 - 0.1 * s) for s in range(9, 13)] + [epoch(3, 12, 1.5, 0.6)]
           + [step(s, 2.0 - 0.1 * s) for s in range(13, 17)] + [epoch(4, 16, 1.0, 0.7)])


# A language model's epoch lines (tools/cli/training_log.h): perplexities, no accuracy.
LANGUAGE_MODEL = [json.dumps({"event": "epoch", "epoch": n, "epochs": 2, "global_step": 10 * n, "lr": 1.0,
                              "train_loss": 5.0 - n, "train_perplexity": 2.718 ** (5.0 - n),
                              "valid_loss": 5.5 - n, "valid_perplexity": 2.718 ** (5.5 - n),
                              "test_loss": 5.5 - n, "test_perplexity": 2.718 ** (5.5 - n),
                              "tokens_per_second": 1000.0}) for n in (1, 2)]


class Log:
    """A log file of the given lines (or bytes) in a temporary folder."""

    def __init__(self, content, name="run.jsonl"):
        self.root = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.root.name, name)
        with open(self.path, "wb") as f:
            f.write(content if isinstance(content, bytes) else ("\n".join(content) + "\n").encode())

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        self.root.cleanup()


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


class ReadLog(unittest.TestCase):
    def test_a_resumed_run_keeps_the_later_line_for_each_epoch_and_step(self):
        with Log(RESUMED) as path:
            epochs, steps, start = plot_training.read_log(path)
        self.assertEqual([e["epoch"] for e in epochs], [1, 2, 3, 4])
        self.assertEqual([s["global_step"] for s in steps], list(range(1, 17)), "one point per step, in order")
        self.assertEqual([s["loss"] for s in steps if s["global_step"] in (9, 10)], [2.0 - 0.9, 2.0 - 1.0])
        self.assertEqual(start.get("resume"), "run")
        epochs_again = [json.loads(line) for line in RESUMED if '"epoch", "epoch"' in line]
        self.assertEqual([e["train_loss"] for e in epochs], [e["train_loss"] for e in epochs_again])

    def test_a_later_epoch_line_replaces_an_earlier_one(self):
        with Log([epoch(1, 4, 2.5, 0.3), epoch(2, 8, 9.0, 0.1), epoch(2, 8, 2.0, 0.5)]) as path:
            epochs, _, _ = plot_training.read_log(path)
        self.assertEqual([(e["epoch"], e["train_loss"]) for e in epochs], [(1, 2.5), (2, 2.0)])

    def test_null_is_a_gap_and_test_scores_are_optional(self):
        # nlohmann::json writes a NaN or infinite loss as null; a language model has no test accuracy.
        lines = [json.dumps({"event": "epoch", "epoch": 1, "global_step": 4, "train_loss": None,
                             "train_accuracy": None}), epoch(2, 8, 2.0, 0.5, test_loss=None)]
        with Log(lines) as path:
            epochs, _, _ = plot_training.read_log(path)
        self.assertNotEqual(epochs[0]["train_loss"], epochs[0]["train_loss"])  # NaN
        self.assertNotEqual(epochs[0]["train_accuracy"], epochs[0]["train_accuracy"])
        self.assertIsNone(epochs[0]["test_loss"])
        self.assertNotEqual(epochs[1]["test_loss"], epochs[1]["test_loss"])
        self.assertEqual(epochs[1]["test_accuracy"], 0.49)

    def test_an_unfinished_line_is_skipped_saying_so(self):
        cut = (epoch(1, 4, 2.5, 0.3) + '\n{"event": "step", "note": "\xe9').encode()[:-1]  # mid-character
        # A run killed while it wrote its first line; the next run appended to the log.
        first = ('{"event": "start", "net' + "\n" + epoch(1, 4, 2.5, 0.3)).encode()
        for content, where in ((RESUMED, ":14:"), (cut, ":2:"), (first, ":1:")):
            with Log(content) as path:
                epochs, _, _ = plot_training.read_log(path)
                self.assertTrue(epochs)
                r = run(path, "--out", os.path.join(os.path.dirname(path), "curves.png"), "--steps")
            self.assertIn(where + " skipped, not JSON", r.stderr)
            self.assertNotIn("Traceback", r.stderr)


class Errors(unittest.TestCase):
    """Each is one line naming the file (and the line and field where there is one), exit code 1."""

    def bad(self, content, message, *flags, out=None):
        with Log(content) as path:
            r = run(path, "--out", out or os.path.join(os.path.dirname(path), "curves.png"), *flags)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertNotIn("Traceback", r.stderr)
            self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
            self.assertEqual(r.stderr, "plot_training.py: " + message.replace("LOG", path) + "\n")
            self.assertFalse(os.path.exists(os.path.join(os.path.dirname(path), "curves.png")))

    def test_lines_that_are_not_a_training_log(self):
        self.bad(["[1, 2]", epoch(1, 4, 2.5, 0.3)], "LOG:1: an array, not an object: not a training log line")
        self.bad([epoch(1, 4, 2.5, 0.3), "3"], "LOG:2: a number, not an object: not a training log line")
        self.bad(['{"event": "epoch", "train_loss": 1}'], 'LOG:1: an epoch line without "epoch"')
        self.bad([epoch(1, 4, 2.5, 0.3), step(2, 1.0).replace('"loss"', '"cost"')], 'LOG:2: a step line without "loss"')
        self.bad([epoch(1, 4, 2.5, 0.3).replace('"train_accuracy"', '"accuracy"')],
                 'LOG:1: an epoch line without "train_accuracy" or "train_perplexity"')
        self.bad([epoch(1, 4, 2.5, 0.3).replace('"epoch": 1', '"epoch": "1"')],
                 'LOG:1: "epoch" must be a whole number, got "1"')
        self.bad([epoch(1, 4, 2.5, 0.3).replace('"train_loss": 2.5', '"train_loss": "2.5"')],
                 'LOG:1: "train_loss" must be a number or null, got a string "2.5"')
        self.bad(b"\xff\xfe\x00garbage\n", "LOG:1: not UTF-8 text (byte 0xff): not a training log?")
        self.bad([json.dumps({"event": "start"})], "LOG has no epoch lines")
        # A pretty-printed JSON file (glassbox time --json) is refused at its first line, not skipped line by line.
        pretty = json.dumps({"kind": "glassbox.time", "network": "LeNet", "layers": [{"name": "conv1"}] * 50},
                            indent=1).splitlines()
        self.bad(pretty, "LOG:1: not JSON (Expecting property name enclosed in double quotes): not a training log "
                         "(one JSON object a line)")

    def test_a_language_models_log_is_not_drawn_with_an_image_classifiers(self):
        with Log(LANGUAGE_MODEL, name="lm.jsonl") as lm, Log(RESUMED[:6]) as images:
            r = run(lm, images, "--out", os.path.join(os.path.dirname(images), "curves.png"))
            self.assertEqual((r.returncode, r.stderr),
                             (1, f"plot_training.py: {lm} scores perplexity and {images} accuracy: plot a language "
                                 "model's logs apart from an image classifier's\n"))

    def test_steps_need_epochs_numbered_from_1(self):
        lines = [epoch(0, 0, 2.5, 0.3), epoch(1, 4, 2.0, 0.5), step(2, 1.5)]
        self.bad(lines, "LOG:1: epoch 0 at global step 0: --steps needs epochs numbered from 1, ending after "
                        "1 step or more, to place the steps", "--steps")

    def test_unreadable_log_and_unwritable_out(self):
        r = run("no-such.jsonl", "--out", "curves.png")
        self.assertEqual((r.returncode, r.stderr),
                         (1, "plot_training.py: no-such.jsonl: cannot read it (No such file or directory)\n"))
        with Log(RESUMED[:6]) as path:
            folder = os.path.dirname(path)
            self.bad(RESUMED[:6], f"cannot write {folder}/no-such-folder/curves.png: no folder {folder}/no-such-folder",
                     out=os.path.join(folder, "no-such-folder", "curves.png"))
            r = run(path, "--out", folder)
            self.assertEqual((r.returncode, r.stderr), (1, f"plot_training.py: cannot write {folder}: it is a folder\n"))

    def test_an_out_that_is_a_log_is_refused_before_reading(self):
        with Log(RESUMED) as path:
            with open(path, "rb") as f:
                before = f.read()
            spellings = (path, os.path.join(os.path.dirname(path), ".", "run.jsonl"))
            for out, logs in [(out, [path]) for out in spellings] + [(path, ["other.jsonl", "run=" + path])]:
                with self.subTest(out=out, logs=logs):
                    r = run(*logs, "--out", out)
                    self.assertEqual(r.returncode, 2, r.stderr)
                    self.assertTrue(r.stderr.endswith(f"plot_training.py: error: --out {out} is the log {path}: "
                                                      "writing it would overwrite the log\n"), r.stderr)
                    with open(path, "rb") as f:
                        self.assertEqual(f.read(), before)
                    self.assertEqual(os.listdir(os.path.dirname(path)), ["run.jsonl"])

    @unittest.skipIf(HAS_MATPLOTLIB, "matplotlib is installed: the next test draws")
    def test_without_matplotlib_says_so(self):
        with Log(RESUMED) as path:
            r = run(path, "--out", os.path.join(os.path.dirname(path), "curves.png"), "--steps")
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stderr.endswith("plot_training.py: needs matplotlib (pip install matplotlib)\n"), r.stderr)

    @unittest.skipUnless(HAS_MATPLOTLIB, "needs matplotlib")
    def test_draws(self):
        with Log(RESUMED) as path:
            out = os.path.join(os.path.dirname(path), "curves.png")
            r = run("resumed=" + path, path, "--out", out, "--steps")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(os.path.getsize(out) > 0)
            with Log(LANGUAGE_MODEL, name="lm.jsonl") as lm:
                r = run(lm, "--out", out)
                self.assertEqual(r.returncode, 0, r.stderr)
            r = run(path, "--out", os.path.join(os.path.dirname(path), "curves.nosuchformat"))
            self.assertEqual(r.returncode, 1)
            self.assertIn("cannot write", r.stderr)
            self.assertIn("matplotlib writes no .nosuchformat files", r.stderr)
            self.assertNotIn("Traceback", r.stderr)
            # The file written is --out itself, named so: without an extension, a PNG under that very name.
            bare = os.path.join(os.path.dirname(path), "curves")
            r = run(path, "--out", bare)
            self.assertEqual((r.returncode, r.stdout), (0, f"wrote {bare}\n"), r.stderr)
            with open(bare, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            r = run(path, "--out", bare + ".svg")
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(bare + ".svg") as f:
                self.assertIn("<svg", f.read())
            self.assertEqual(sorted(os.listdir(os.path.dirname(path))),
                             ["curves", "curves.png", "curves.svg", "run.jsonl"])
            # A closed stdout after the drawing is one line and exit 1, as Glassbox's programs end.
            read, write = os.pipe()
            os.close(read)
            try:
                r = subprocess.run([sys.executable, TOOL, path, "--out", out], stdout=write, stderr=subprocess.PIPE,
                                   text=True)
            finally:
                os.close(write)
            self.assertEqual(r.returncode, 1)
            self.assertTrue(r.stderr.endswith("\nplot_training.py: standard output is incomplete: writing it failed "
                                              "(broken pipe)\n"), r.stderr)  # after the note on line 14
            self.assertNotIn("Traceback", r.stderr)


if __name__ == "__main__":
    unittest.main()
