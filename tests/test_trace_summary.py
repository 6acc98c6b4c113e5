#!/usr/bin/env python3
"""tests/test_trace_summary.py: tools/trace_summary.py on hand-made `glassbox
trace` files. Its spans are read as `glassbox report` reads them
(tools/cli/report_data.cpp, docs/report.md): a GPU's kernel, memcpy and memset
records name the span they ran in with args.layer too and are not spans, and
a trace of several steps (counted by its optimizer spans) gives the mean per
step. tests/data/report/trace.json is the file tests/test_report.cpp reads."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "trace_summary.py")
REPORT_TRACE = os.path.join(ROOT, "tests", "data", "report", "trace.json")
OTHER = {"kind": "glassbox.trace", "network": "Tiny", "batch": 8, "device": "cuda:0", "device_name": "H100",
         "step_ms": 1.0}


def span(layer, kind, pass_, ts, dur, flops=0.0):
    args = {"layer": layer, "type": kind, "pass": pass_}
    if flops:
        args["flops"] = flops
    return {"name": f"{layer} {pass_}", "cat": pass_, "ph": "X", "ts": ts, "dur": dur, "pid": 1, "tid": 1,
            "args": args}


def record(cat, name, layer, pass_, ts, dur):
    """A GPU's device record, as tools/cli/trace_kernels.cpp adds it: it names its span."""
    return {"name": name, "cat": cat, "ph": "X", "ts": ts, "dur": dur, "pid": 1, "tid": 2,
            "args": {"layer": layer, "pass": pass_}}


def step(t0, fc_forward):
    """One step of 1000 us of spans: fc forward, its kernel and a copy, loss, fc backward, sgd."""
    return [span("fc", "Linear", "forward", t0, fc_forward, flops=2e9),
            record("kernel", "gemm", "fc", "forward", t0 + 1, fc_forward - 10),
            record("memcpy", "memcpy HtoD", "fc", "forward", t0 + 2, 5),
            span("loss", "SoftmaxCrossEntropy", "forward", t0 + 400, 1000 - 200 - 100 - fc_forward),
            span("fc", "Linear", "backward-data", t0 + 500, 100),
            span("sgd", "SGD", "optimizer", t0 + 700, 200),
            record("kernel", "sgd_kernel", "sgd", "optimizer", t0 + 701, 150)]


# Two steps: fc forward takes 300 us in the first and 500 us in the second.
DOC = {"traceEvents": [{"name": "process_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "glassbox"}}]
       + step(0, 300) + step(2000, 500), "otherData": OTHER}


def run(doc, *flags):
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "tiny.trace.json")
        with open(path, "wb" if isinstance(doc, bytes) else "w") as f:
            f.write(doc if isinstance(doc, (str, bytes)) else json.dumps(doc))
        return subprocess.run([sys.executable, TOOL, path, *flags], capture_output=True, text=True)


def rows(output, first_cell):
    return [line for line in output.splitlines() if line.startswith(f"| {first_cell} |")]


class TraceSummary(unittest.TestCase):
    def test_device_records_are_not_spans_and_steps_are_averaged(self):
        r = run(DOC)
        self.assertEqual(r.returncode, 0, r.stderr)
        # 2000 us of spans over 2 steps: 1.0 ms per step, not 2 ms (steps added) or 3.7 ms (records too).
        self.assertIn("Tiny, batch 8, on cuda:0 (H100): one train step of 1.0 ms; its spans cover 1.0 ms\n", r.stdout)
        self.assertIn("The trace holds 2 steps (optimizer spans): times below are the mean per step.", r.stdout)
        self.assertIn("GPU kernels: 4 records, 0.540 ms per step", r.stdout)
        self.assertIn("GPU copies and sets: 2 records, 0.005 ms per step", r.stdout)
        self.assertEqual(rows(r.stdout, "forward"), ["| forward | 0.7 | 70.0% |"])
        self.assertEqual(rows(r.stdout, "optimizer"), ["| optimizer | 0.2 | 20.0% |"])
        # fc forward: (0.3 + 0.5) / 2 ms; 2 GFLOP per step in each of its passes' spans that have flops.
        self.assertEqual(rows(r.stdout, "fc"), ["| fc | Linear | 0.40 | 0.10 |  |  | 2.00 |"])
        self.assertEqual(rows(r.stdout, "sgd"), ["| sgd | SGD |  |  |  | 0.20 | 0.00 |"])
        names = [line.split(" | ")[0] for line in r.stdout.split("longest spans")[1].splitlines() if line[:2] == "| "]
        self.assertNotIn("| gemm", names)
        self.assertNotIn("| memcpy HtoD", names)
        self.assertIn("| fc forward | 0.50 | 50.0% |", r.stdout)

    def test_one_step_is_not_divided(self):
        one = {"traceEvents": step(0, 300), "otherData": OTHER}
        r = run(one)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("mean per step", r.stdout)
        self.assertEqual(rows(r.stdout, "fc"), ["| fc | Linear | 0.30 | 0.10 |  |  | 2.00 |"])

    def test_agrees_with_glassbox_report_on_its_test_trace(self):
        # tests/test_report.cpp: glassbox report shows conv1 forward as 0.410 ms for this file.
        r = subprocess.run([sys.executable, TOOL, REPORT_TRACE], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(rows(r.stdout, "conv1")[0].startswith("| conv1 | Conv2d | 0.41 |"), r.stdout)

    def test_top_and_zero_spans(self):
        refused = run(DOC, "--top", "-1")
        self.assertEqual(refused.returncode, 2)
        self.assertIn("--top", refused.stderr)
        self.assertNotIn("Traceback", refused.stderr)
        zero = {"traceEvents": [span("fc", "Linear", "forward", 0, 0)], "otherData": OTHER}
        r = run(zero)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("| fc forward | 0.00 | - |", r.stdout)

    def bad(self, doc, message):
        r = run(doc)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertIn("tiny.trace.json: not a glassbox trace (" + message, r.stderr)

    def test_bad_input_is_one_line_naming_the_field(self):
        self.bad("{ not json", "Expecting property name")
        self.bad(b"\xff\xfe garbage", "'utf-8' codec can't decode")
        self.bad([], "the top level is a JSON array, not an object with traceEvents and otherData")
        self.bad({"traceEvents": []}, "field otherData is missing")
        self.bad({"traceEvents": [], "otherData": {}}, "field otherData.network is missing")
        self.bad({"traceEvents": [], "otherData": dict(OTHER, step_ms="1")},
                 'field otherData.step_ms must be a number, got string "1"')
        self.bad({"traceEvents": {}, "otherData": OTHER}, "field traceEvents must be an array, got object")
        no_dur = json.loads(json.dumps(DOC))
        del no_dur["traceEvents"][1]["dur"]
        self.bad(no_dur, "field traceEvents[1].dur is missing")
        no_dur = json.loads(json.dumps(DOC))
        del no_dur["traceEvents"][2]["dur"]
        self.bad(no_dur, "field traceEvents[2].dur is missing")
        self.bad({"traceEvents": [1], "otherData": OTHER}, "field traceEvents[0] must be an object, got number 1")
        self.bad({"traceEvents": [{"ph": "X", "dur": 5, "args": "x"}], "otherData": OTHER},
                 'field traceEvents[0].args must be an object, got string "x"')
        self.bad({"traceEvents": [{"ph": "X", "dur": 5, "args": {"layer": 3}}], "otherData": OTHER},
                 "field traceEvents[0].args.layer must be a string, got number 3")
        self.bad('{"traceEvents": [{"ph": "X", "dur": NaN, "args": {"layer": "a"}}], "otherData": '
                 + json.dumps(OTHER) + "}", "field traceEvents[0].dur must be a number, got number NaN")
        # Times and FLOPs are 0 or more, the batch 1 or more and whole: a negative figure is never printed.
        self.bad({"traceEvents": [], "otherData": dict(OTHER, step_ms=-5)},
                 "field otherData.step_ms must be 0 or more, got -5")
        for batch in (-5, 0, 2.5):
            self.bad({"traceEvents": [], "otherData": dict(OTHER, batch=batch)},
                     f"field otherData.batch must be a whole number, 1 or more, got {batch}")
        self.bad({"traceEvents": [span("fc", "Linear", "forward", 0, 10, flops=-1e12)], "otherData": OTHER},
                 "field traceEvents[0].args.flops must be 0 or more, got -1000000000000.0")
        # A pass the step does not have would drop out of the per-pass table, and the shares would not add up.
        passes = "forward, backward-data, backward-weights, backward, optimizer"
        self.bad({"traceEvents": [span("fc", "Linear", "recompute", 0, 10)], "otherData": OTHER},
                 f'field traceEvents[0].args.pass must be one of {passes}, got string "recompute"')
        no_pass = span("fc", "Linear", "recompute", 0, 10)
        del no_pass["args"]["pass"]
        self.bad({"traceEvents": [no_pass], "otherData": OTHER},
                 f'field traceEvents[0].cat must be one of {passes}, got string "recompute"')
        del no_pass["cat"]
        self.bad({"traceEvents": [no_pass], "otherData": OTHER}, "field traceEvents[0].args.pass is missing")
        r = subprocess.run([sys.executable, TOOL, "no-such.trace.json"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "trace_summary.py: no-such.trace.json: cannot read it (No such file or directory)\n")

    def test_a_whole_batch_given_as_a_float_prints_whole(self):
        r = run({"traceEvents": step(0, 300), "otherData": dict(OTHER, batch=8.0)})
        self.assertIn("Tiny, batch 8, on cuda:0", r.stdout)

    def test_a_closed_stdout_is_one_line_and_exit_1(self):
        """A reader that stops early (`| head`) ends the run as Glassbox's programs do: no traceback."""
        read, write = os.pipe()
        os.close(read)  # closed before the script writes: every write fails with EPIPE
        try:
            r = subprocess.run([sys.executable, TOOL, REPORT_TRACE], stdout=write, stderr=subprocess.PIPE, text=True)
        finally:
            os.close(write)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "trace_summary.py: standard output is incomplete: writing it failed (broken pipe)\n")


if __name__ == "__main__":
    unittest.main()
