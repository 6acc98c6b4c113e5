#!/usr/bin/env python3
"""bench/peers/test_peer_args.py: the parts of the PyTorch peers that need
neither torch nor a glassbox build: their flags, checked before anything
runs; the files they read (pytorch_train.py's IDX files, lstm_lm.py's ids);
memory_side_by_side.py's handling of a child that fails; torch_gemm.py's
answers to request lines; lstm_lm.py's timed steps, on a stand-in torch
(the optimizer and the zeroing of gradients pytorch_nets.py's steps use). Each script is imported without torch, as it
loads torch only once its checks have passed.

    python3 bench/peers/test_peer_args.py      # any Python 3, standard library only
"""

import contextlib
import gzip
import io
import json
import math
import os
import stat
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lstm_lm  # noqa: E402
import memory_side_by_side as side  # noqa: E402
import pytorch_nets  # noqa: E402
import pytorch_train  # noqa: E402
import torch_gemm  # noqa: E402
from results_io import BadInput  # noqa: E402  (bench/, which the scripts put on the path)


def usage_error(test, function, argv):
    """Runs function(argv), which must stop with argparse's usage error (exit status 2); its message."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), test.assertRaises(SystemExit) as stop:
        function(argv)
    test.assertEqual(stop.exception.code, 2, stderr.getvalue())
    return stderr.getvalue().strip().splitlines()[-1]


def status_and_error(function, argv):
    """(the status function(argv) returns, what it printed on stderr)."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        status = function(argv)
    return status, stderr.getvalue().strip()


def write_program(folder, name, script):
    """An executable shell script `name` in `folder`: a stand-in for a child program."""
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + script)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


# ---- pytorch_train.py ---------------------------------------------------------------------

def idx_images(count, rows=28, columns=28):
    return bytes([0, 0, 8, 3]) + struct.pack(">3I", count, rows, columns) + bytes(count * rows * columns)


def idx_labels(count):
    return bytes([0, 0, 8, 1]) + struct.pack(">I", count) + bytes(i % 10 for i in range(count))


def write_idx_folder(folder, images, labels, compress=True):
    """The four Fashion-MNIST files, train and test alike, gzip-compressed or not."""
    for prefix in ("train", "t10k"):
        for stem, data in ((f"{prefix}-images-idx3-ubyte", idx_images(images)),
                           (f"{prefix}-labels-idx1-ubyte", idx_labels(labels))):
            if compress:
                with gzip.open(os.path.join(folder, stem + ".gz"), "wb") as f:
                    f.write(data)
            else:
                with open(os.path.join(folder, stem), "wb") as f:
                    f.write(data)


class TrainFlagsTest(unittest.TestCase):
    def test_counts_and_rates_out_of_range_are_usage_errors(self):
        for flags, message in ((["--batch", "0"], "argument --batch: must be 1 or more, got 0"),
                               (["--batch", "-4"], "argument --batch: must be 1 or more, got -4"),
                               (["--epochs", "0"], "argument --epochs: must be 1 or more, got 0"),
                               (["--epochs", "-1"], "argument --epochs: must be 1 or more, got -1"),
                               (["--threads", "0"], "argument --threads: must be 1 or more, got 0"),
                               (["--workers", "-1"], "argument --workers: must be 0 or more, got -1"),
                               (["--lr", "nan"], "argument --lr: must be a number above 0, got nan"),
                               (["--lr", "inf"], "argument --lr: must be a number above 0, got inf"),
                               (["--lr", "0"], "argument --lr: must be a number above 0, got 0"),
                               (["--lr", "-0.1"], "argument --lr: must be a number above 0, got -0.1"),
                               (["--momentum", "nan"], "--momentum must be from 0 to 1, got nan"),
                               (["--weight-decay", "-1"], "--weight-decay must be a finite number, 0 or more"),
                               (["--epochs", "2", "--warmup-epochs", "2"], "--warmup-epochs 2 leaves none of the 2"),
                               (["--seed", str(2 ** 64)], "--seed must be from 0 to"),
                               (["--data", "fashion-mnist:"], "--data fashion-mnist:DIR needs the folder DIR")):
            with self.subTest(flags=flags):
                self.assertIn(message, usage_error(self, pytorch_train.parse_args, flags))

    def test_log_path_is_checked_before_training(self):
        with tempfile.TemporaryDirectory() as folder:
            self.assertIn(f"--log {folder} is a folder, not a file",
                          usage_error(self, pytorch_train.parse_args, ["--log", folder]))
            missing = os.path.join(folder, "no-such-folder", "log.jsonl")
            self.assertIn(f"--log {missing}: there is no folder",
                          usage_error(self, pytorch_train.parse_args, ["--log", missing]))
            args = pytorch_train.parse_args(["--log", os.path.join(folder, "log.jsonl"), "--batch", "2"])
            self.assertEqual((args.batch, args.folder), (2, pytorch_train.FASHION_MNIST))

    def test_log_that_is_an_input_is_refused(self):
        with tempfile.TemporaryDirectory() as folder:
            write_idx_folder(folder, 4, 4)
            images = os.path.join(folder, "train-images-idx3-ubyte.gz")
            status, error = status_and_error(pytorch_train.main, ["--data", f"fashion-mnist:{folder}", "--log", images])
            self.assertEqual(status, 2)
            self.assertIn(f"--log {images} is also an input", error)


class TrainDataTest(unittest.TestCase):
    def setUp(self):
        temporary = tempfile.TemporaryDirectory()
        self.addCleanup(temporary.cleanup)
        self.folder = temporary.name

    def write(self, name, data):
        path = os.path.join(self.folder, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_reads_gzip_and_plain_files_by_their_first_bytes(self):
        count, data = pytorch_train.read_idx(self.write("a.gz", gzip.compress(idx_images(3))), 3)
        self.assertEqual((count, len(data)), (3, 16 + 3 * 784))
        self.assertEqual(pytorch_train.read_idx(self.write("b.gz", idx_labels(5)), 1)[0], 5)  # not compressed

    def test_bad_files_name_the_file_and_what_is_wrong(self):
        good = gzip.compress(idx_images(3))
        cases = (("empty", b"", 3, "truncated at byte 0 of the decompressed data: an IDX header of 3 dimensions"),
                 ("truncated.gz", good[:40], 3, "not a whole gzip file"),
                 ("corrupt.gz", good[:10] + bytes(len(good) - 10), 3, "not a whole gzip file"),
                 ("text", b"hello world", 3, "byte 0: not an IDX file: expected the magic 00 00 08 03"),
                 ("labels", idx_labels(3), 3, "byte 3: 1 dimension, expected 3 (images, rows, columns): is it a "
                                              "labels file?"),
                 ("short", idx_images(3)[:100], 3, "truncated at byte 100 of the decompressed data: 3 images of "
                                                    "28x28 need 2,368 bytes"),
                 ("long", idx_images(3) + b"xy", 3, "byte 2,368: 2 bytes past the end of 3 images of 28x28"),
                 ("small", idx_images(3, 14, 14), 3, "byte 8: images of 14x14, expected 28x28"),
                 ("none", idx_labels(0), 1, "byte 4: 0 labels; expected at least one"),
                 ("class", idx_labels(3)[:-1] + b"\x0c", 1, "byte 10: label 12 (of image 2); expected 0 to 9"))
        for name, data, rank, message in cases:
            with self.subTest(name=name):
                path = self.write(name, data)
                with self.assertRaises(BadInput) as caught:
                    pytorch_train.read_idx(path, rank)
                self.assertTrue(str(caught.exception).startswith(path + ": "), str(caught.exception))
                self.assertIn(message, str(caught.exception))
        with self.assertRaisesRegex(BadInput, "cannot read"):
            pytorch_train.read_idx(self.folder, 3)

    def test_more_images_than_labels_is_refused(self):
        images, labels = self.write("images", idx_images(64)), self.write("labels", idx_labels(16))
        with self.assertRaises(BadInput) as caught:
            pytorch_train.read_split(images, labels)
        self.assertEqual(str(caught.exception), f"{images} has 64 images but {labels} has 16 labels")

    def test_main_stops_on_bad_data_and_on_a_batch_larger_than_the_set(self):
        write_idx_folder(self.folder, 64, 16)
        status, error = status_and_error(pytorch_train.main, ["--data", f"fashion-mnist:{self.folder}"])
        self.assertEqual(status, 1)
        self.assertRegex(error, r"train-images-idx3-ubyte.gz has 64 images but .*train-labels-idx1-ubyte.gz has 16 "
                                "labels$")
        write_idx_folder(self.folder, 8, 8, compress=False)
        for name in os.listdir(self.folder):
            if name.endswith(".gz"):
                os.remove(os.path.join(self.folder, name))
        status, error = status_and_error(pytorch_train.main, ["--data", f"fashion-mnist:{self.folder}", "--batch", "9"])
        self.assertEqual(status, 2)
        self.assertIn("--batch 9: ", error)
        self.assertIn("has 8 images, fewer than one batch", error)

    def test_an_epoch_is_the_full_batches_of_the_images_given(self):
        # As Glassbox's Loader counts them (drop_last), so the cosine runs over the same steps.
        self.assertEqual(pytorch_train.steps_per_epoch(64, 16), 4)
        self.assertEqual(pytorch_train.steps_per_epoch(100, 16), 6)
        self.assertEqual(pytorch_train.steps_per_epoch(60000, 64), 937)
        with self.assertRaisesRegex(BadInput, "8 images, fewer than one batch"):
            pytorch_train.steps_per_epoch(8, 9)


# ---- lstm_lm.py ---------------------------------------------------------------------------

def corpus_file(path, sizes, vocabulary=("<unk>", "<eos>", "a", "b", "c"), metadata=None, ids=None):
    """A file as `glassbox corpus --out` writes it: I32 train, valid, test, the vocabulary in the metadata."""
    header, body = {"__metadata__": metadata or {"format": "glassbox.corpus v1", "vocabulary_digest": "d",
                                                  "vocabulary": "".join(w + "\n" for w in vocabulary)}}, b""
    for name in ("train", "valid", "test"):
        values = (ids or {}).get(name, [i % len(vocabulary) for i in range(sizes[name])])
        data = struct.pack(f"<{len(values)}i", *values)
        header[name] = {"dtype": "I32", "shape": [len(values)], "data_offsets": [len(body), len(body) + len(data)]}
        body += data
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)
    return path


class LanguageModelFlagsTest(unittest.TestCase):
    def test_modes(self):
        self.assertEqual(lstm_lm.parse_modes("forward_backward,inference,forward_backward"),
                         ["forward_backward", "inference"])
        self.assertEqual(lstm_lm.parse_modes("forward,forward_backward,train_step,inference"), lstm_lm.MODES)
        for text in ("foo", ",", "", "forward,", "forward,,inference", "Forward"):
            with self.subTest(text=text):
                with self.assertRaisesRegex(BadInput, "--time .*expected modes separated by commas, each one of "
                                                      "forward, forward_backward, train_step, inference"):
                    lstm_lm.parse_modes(text)

    def test_schedules(self):
        self.assertIsNone(lstm_lm.parse_schedule("constant"))
        self.assertEqual(lstm_lm.parse_schedule("step:2:0.5"), (2, 0.5))
        self.assertEqual(lstm_lm.lr_at(1.0, "step:2:0.5", 5), 0.25)
        self.assertEqual(lstm_lm.lr_at(1.0, "constant", 5), 1.0)
        for text in ("linear", "cosine", "step:x", "step:2", "step:0:0.5", "step:1:0", "step:1:1.5", "step:1:nan",
                     "step:1:0.5:2", "steps:1:0.5"):
            with self.subTest(text=text):
                with self.assertRaisesRegex(BadInput, "--schedule .*expected constant or step:EPOCHS:GAMMA"):
                    lstm_lm.parse_schedule(text)

    def test_bad_flags_are_usage_errors(self):
        with tempfile.TemporaryDirectory() as folder:
            ids = corpus_file(os.path.join(folder, "ids.safetensors"), {"train": 1, "valid": 1, "test": 1})
            cases = ((["--time", "foo"], "--time 'foo': expected modes"),
                     (["--time", ","], "--time ',': expected modes"),
                     (["--time", "forward", "--batch", "0"], "argument --batch: must be 1 or more, got 0"),
                     (["--time", "forward", "--min-time", "inf"], "argument --min-time: must be a number above 0"),
                     (["--time", "forward", "--min-time", "nan"], "argument --min-time: must be a number above 0"),
                     (["--time", "forward", "--warmup", "-1"], "argument --warmup: must be 0 or more"),
                     (["--time", "forward", ids], "--time times steps on random ids and trains nothing"),
                     ([ids, "--schedule", "step:0:0.5"], "--schedule 'step:0:0.5': expected constant"),
                     ([ids, "--lr", "nan"], "argument --lr: must be a number above 0, got nan"),
                     ([ids, "--clip", "-1"], "--clip must be a finite number, 0 (no clipping) or more"),
                     ([ids, "--epochs", "-1"], "argument --epochs: must be 0 or more"),
                     ([ids, "--threads", "-1"], "argument --threads: must be 0 or more"),
                     ([ids, "--net", "GRU"], "unknown network 'GRU'; valid: LSTM, LSTMLarge, LSTMSmall"),
                     ([ids, "--json", folder], f"--json {folder} is a folder, not a file"),
                     ([ids, "--save", os.path.join(folder, "none", "m.safetensors")], "there is no folder"),
                     ([ids, "--save", ids], "is also an input"),
                     ([ids, "--weights", ids, "--save", os.path.join(folder, "m")], "--weights scores a model file"),
                     ([ids, "--json", os.path.join(folder, "x"), "--save", os.path.join(folder, "x")],
                      "--json and --save are the same file"),
                     ([], "give the ids file"))
            for flags, message in cases:
                with self.subTest(flags=flags):
                    self.assertIn(message, usage_error(self, lstm_lm.parse_args, flags))

    def test_perplexity_past_a_doubles_range_is_infinite_and_json_null(self):
        self.assertEqual(lstm_lm.perplexity(0.0), 1.0)
        self.assertEqual(lstm_lm.perplexity(1e6), math.inf)
        self.assertEqual([lstm_lm.json_value(v) for v in (1.5, math.inf, math.nan, 3)], [1.5, None, None, 3])


class LanguageModelIdsTest(unittest.TestCase):
    def setUp(self):
        temporary = tempfile.TemporaryDirectory()
        self.addCleanup(temporary.cleanup)
        self.folder = temporary.name

    def path(self, name):
        return os.path.join(self.folder, name)

    def test_reads_the_splits_and_vocabulary(self):
        splits, vocabulary, digest = lstm_lm.read_corpus(
            corpus_file(self.path("ids"), {"train": 7, "valid": 3, "test": 0}))
        self.assertEqual({name: list(ids) for name, ids in splits.items()},
                         {"train": [0, 1, 2, 3, 4, 0, 1], "valid": [0, 1, 2], "test": []})
        self.assertEqual((vocabulary, digest), (5, "d"))

    def test_bad_files_name_the_file(self):
        with open(self.path("empty"), "wb"):
            pass
        with open(self.path("json"), "w") as f:
            f.write('{"a": 1}')
        with open(self.path("garbage"), "wb") as f:
            f.write(struct.pack("<Q", 3) + b"{x}")
        sizes = {"train": 4, "valid": 4, "test": 4}
        cases = ((self.path("missing"), "cannot read: No such file or directory"),
                 (self.folder, "cannot read"),
                 (self.path("empty"), "is not what `glassbox corpus --out` writes: 0 bytes"),
                 (self.path("json"), "is not what `glassbox corpus --out` writes: its first 8 bytes give a header"),
                 (self.path("garbage"), "its safetensors header is not JSON"),
                 (corpus_file(self.path("pt"), sizes, metadata={"format": "pt"}), 'no __metadata__ with "format"'),
                 (corpus_file(self.path("large"), sizes, ids={"valid": [0, 5]}),
                  "valid id 5 (token 1 of 2) is outside the vocabulary of 5 words (ids 0 to 4)"),
                 (corpus_file(self.path("negative"), sizes, ids={"test": [-1]}),
                  "test id -1 (token 0 of 1) is outside the vocabulary of 5 words"))
        for path, message in cases:
            with self.subTest(path=path):
                with self.assertRaises(BadInput) as caught:
                    lstm_lm.read_corpus(path)
                self.assertTrue(str(caught.exception).startswith(path), str(caught.exception))
                self.assertIn(message, str(caught.exception))

    def test_each_split_needs_a_window_of_every_stream(self):
        path = corpus_file(self.path("ids"), {"train": 42, "valid": 3, "test": 41})
        splits, _, _ = lstm_lm.read_corpus(path)
        lstm_lm.check_windows(path, splits, ["train"], 2, 20)
        with self.assertRaisesRegex(BadInput, "the valid split's 3 tokens are too few for 2 streams .* and one "
                                              "window of 20 steps: .* 42 in all"):
            lstm_lm.check_windows(path, splits, lstm_lm.SPLITS, 2, 20)
        with self.assertRaisesRegex(BadInput, "the test split's 41 tokens are too few"):
            lstm_lm.check_windows(path, splits, ["test"], 2, 20)
        with self.assertRaisesRegex(BadInput, "the train split's 42 tokens are too few for 3 streams"):
            lstm_lm.check_windows(path, splits, ["train"], 3, 20)

    def test_main_stops_on_a_bad_ids_or_weights_file(self):
        status, error = status_and_error(lstm_lm.main, [self.path("missing")])
        self.assertEqual((status, error), (1, f"lstm_lm.py: {self.path('missing')}: cannot read: No such file or "
                                              "directory"))
        small = corpus_file(self.path("small"), {"train": 8, "valid": 8, "test": 8})
        status, error = status_and_error(lstm_lm.main, [small, "--batch", "2"])
        self.assertEqual(status, 1)
        self.assertIn("LSTMSmall predicts 10000 words; the vocabulary of", error)
        status, error = status_and_error(lstm_lm.main, [small, "--weights", self.path("none.safetensors")])
        self.assertEqual((status, error), (1, f"lstm_lm.py: --weights {self.path('none.safetensors')}: no such file"))


class LanguageModelTimedStepTest(unittest.TestCase):
    """--time steps as pytorch_nets.py steps (peer_protocol.Session.step), checked on a stand-in torch: the
    optimizer is peer_protocol.make_sgd's (fused where torch has it), and each forward_backward and train_step
    step zeroes the gradients with set_to_none=True."""

    def time(self, mode):
        from unittest import mock
        import peer_protocol
        torch = mock.MagicMock(name="torch")
        model = mock.MagicMock(name="model")
        model.return_value = (mock.MagicMock(name="logits"), None)
        spec = mock.MagicMock(name="spec", vocabulary=10, steps=4)
        spec.name = "LSTMSmall"
        spec.build.return_value = model
        args = lstm_lm.parse_args(["--time", mode, "--warmup", "2", "--min-time", "1e-9", "--batch", "3"])
        with mock.patch.dict(sys.modules, {"torch": torch}), contextlib.redirect_stdout(io.StringIO()):
            rates = lstm_lm.time_modes(spec, args)
        self.assertEqual(list(rates), [f"LSTMSmall/{mode}/batch:3"])
        (_, settings), = [(call.args, call.kwargs) for call in torch.optim.SGD.call_args_list]
        self.assertEqual(settings, dict(peer_protocol.SGD_SETTINGS, fused=True))
        return model, torch.optim.SGD.return_value

    def test_each_step_with_a_backward_zeroes_the_gradients_to_none_first(self):
        for mode in ("forward_backward", "train_step"):
            with self.subTest(mode=mode):
                model, optimizer = self.time(mode)
                steps = model.call_count  # one forward (and loss) a step
                self.assertGreaterEqual(steps, 2 + 3)
                self.assertEqual(model.zero_grad.call_args_list, [((), {"set_to_none": True})] * steps)
                self.assertEqual(optimizer.zero_grad.call_count, 0)
                self.assertEqual(optimizer.step.call_count, steps if mode == "train_step" else 0)
        for mode in ("forward", "inference"):
            with self.subTest(mode=mode):
                model, optimizer = self.time(mode)
                self.assertEqual((model.zero_grad.call_count, optimizer.step.call_count), (0, 0))


# ---- pytorch_nets.py ----------------------------------------------------------------------

class NetsFlagsTest(unittest.TestCase):
    def test_min_time_must_be_finite_and_above_zero(self):
        for value in ("inf", "nan", "0", "-1"):
            with self.subTest(value=value):
                with self.assertRaisesRegex(pytorch_nets.UsageError, "--min-time must be a finite number of seconds "
                                                                     "above 0"):
                    pytorch_nets.parse_args(["--min-time", value, "LeNet"])
        self.assertEqual(pytorch_nets.parse_args(["--min-time", "0.25", "LeNet"]).min_time, 0.25)


# ---- memory_side_by_side.py ---------------------------------------------------------------

class SideBySideTest(unittest.TestCase):
    def setUp(self):
        temporary = tempfile.TemporaryDirectory()
        self.addCleanup(temporary.cleanup)
        self.folder = temporary.name
        self.program = write_program(self.folder, "ok", "exit 0\n")

    def test_flags_nets_modes_and_programs_are_checked_first(self):
        ok = ["--bench", self.program, "--python", self.program]
        missing = os.path.join(self.folder, "missing")
        cases = ((["--bench", missing, "--python", self.program, "LeNet"],
                  f"--bench {missing}: no such program (not found, or not executable)"),
                 (["--bench", self.program, "--python", missing, "LeNet"], f"--python {missing}: no such program"),
                 (ok + ["--batch", "0", "LeNet"], "argument --batch: must be 1 or more, got 0"),
                 (ok + ["--threads", "0", "LeNet"], "argument --threads: must be 1 or more, got 0"),
                 (ok + ["ResNet51"], "unknown net 'ResNet51' (known: LeNet, AlexNet"),
                 (ok + ["LSTM"], "unknown net 'LSTM'"),
                 (ok + ["--modes", "foo", "LeNet"], "--modes 'foo': expected modes separated by commas"),
                 (ok + ["--modes", ",", "LeNet"], "--modes ',': expected modes"))
        for flags, message in cases:
            with self.subTest(flags=flags):
                self.assertIn(message, usage_error(self, side.parse_args, flags))

    def test_nets_in_any_case_are_spelled_as_bench_nets_spells_them(self):
        args = side.parse_args(["--bench", self.program, "--python", self.program, "--modes", "inference,forward",
                                "lenet", "LeNet", "resnet50"])
        self.assertEqual((args.nets, args.modes), (["LeNet", "ResNet50"], ["inference", "forward"]))

    def test_a_failed_child_passes_its_error_line_and_status_through(self):
        python = write_program(self.folder, "python", 'echo "peak_memory.py: error: something" >&2\nexit 3\n')
        status, error = status_and_error(side.main, ["--bench", self.program, "--python", python, "LeNet"])
        self.assertEqual((status, error), (3, "peak_memory.py: error: something"))
        bench = write_program(self.folder, "bench", 'echo "bench_nets: cannot start" >&2\nexit 4\n')
        status, error = status_and_error(side.main, ["--bench", bench, "--python", python, "LeNet"])
        self.assertEqual((status, error), (4, "bench_nets: cannot start"))
        quiet = write_program(self.folder, "quiet", "exit 2\n")
        with self.assertRaises(side.ChildFailed) as caught:
            side.pytorch(quiet, ["LeNet"], ["inference"], 2, 1)
        self.assertEqual((str(caught.exception), caught.exception.status),
                         ("peak_memory.py exited with status 2 and printed nothing", 2))

    def test_a_measurement_that_failed_is_named(self):
        # peak_memory.py writes the failed row into its JSON and exits 1.
        script = ('out=""\nwhile [ $# -gt 0 ]; do [ "$1" = --json ] && out=$2; shift; done\n'
                  'printf \'{"benchmarks": [{"name": "LeNet/inference/batch:2", "error_occurred": true, '
                  '"error_message": "out of memory"}]}\' > "$out"\nexit 1\n')
        python = write_program(self.folder, "python", script)
        with self.assertRaises(side.ChildFailed) as caught:
            side.pytorch(python, ["LeNet"], ["inference"], 2, 1)
        self.assertEqual((str(caught.exception), caught.exception.status),
                         ("peak_memory.py: LeNet/inference/batch:2: out of memory", 1))


# ---- torch_gemm.py ------------------------------------------------------------------------

class GemmRequestsTest(unittest.TestCase):
    PREFIX = "error: expected 'm n k seconds' (sides from 1 to 1048576, seconds up to 3600), got "

    def test_requests(self):
        self.assertEqual(torch_gemm.parse_request("8 16 32 0.01\n"), (8, 16, 32, 0.01))
        self.assertEqual(torch_gemm.parse_request("8\t16 32 3600\r\n"), (8, 16, 32, 3600.0))
        cases = {
            "8 8 8 0": "seconds must be a number from 1e-06 to 3600, got '0'",
            "8 8 8 nan": "seconds must be a number from 1e-06 to 3600, got 'nan'",
            "8 8 8 1e6": "seconds must be a number from 1e-06 to 3600, got '1e6'",
            "-1 8 8 0.01": "m must be an integer from 1 to 1048576, got '-1'",
            "8 0 8 0.01": "n must be an integer from 1 to 1048576, got '0'",
            "8 8 1048577 0.01": "k must be an integer from 1 to 1048576, got '1048577'",
            "8.5 8 8 0.01": "m must be an integer from 1 to 1048576, got '8.5'",
            "8 8": "2 words where 4 are",
            "8 8 8 0.01 extra": "5 words where 4 are",
        }
        for line, why in cases.items():
            with self.subTest(line=line):
                with self.assertRaises(ValueError) as caught:
                    torch_gemm.parse_request(line + "\n")
                self.assertEqual(str(caught.exception), f"{self.PREFIX}{line!r}: {why}")

    def test_every_bad_line_is_answered_and_blank_lines_are_not(self):
        self.assertEqual(torch_gemm.answer("8 8 8 0\n"),
                         f"{self.PREFIX}'8 8 8 0': seconds must be a number from 1e-06 to 3600, got '0'")
        self.assertIsNone(torch_gemm.answer("  \n"))

    def test_threads_must_be_one_or_more(self):
        self.assertIn("argument --threads: must be 1 or more, got 0",
                      usage_error(self, torch_gemm.main, ["--threads", "0"]))


if __name__ == "__main__":
    unittest.main()
