#!/usr/bin/env python3
"""tests/test_kernels_summary.py: tools/kernels_summary.py on a hand-made
`glassbox kernels --json` file of one residual block (tools/cli/kernels_json.h
is the schema; KernelsJson.NamesLayerTypesAndWhoRunsEachFusedPass in
tests/test_kernel_map.cpp checks that the program writes these fields). The
kernel names are inputs, not facts about which kernels a GPU runs."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "kernels_summary.py")


def kernel(name, family, count, gpu_ms):
    return {"name": name, "full_name": "void " + name + "()", "family": family, "count": count, "gpu_ms": gpu_ms,
            "share": gpu_ms / 10.0}


def span(layer, kind, pass_, kernels=(), fused_into="", runs=()):
    kernels = list(kernels)
    gpu = sum(k["gpu_ms"] for k in kernels)
    return {"id": 0, "layer": layer, "type": kind, "pass": pass_, "precision": "bf16", "layout": "NHWC",
            "fused_into": fused_into, "runs": list(runs), "span_ms": gpu, "count": sum(k["count"] for k in kernels),
            "gpu_ms": gpu, "share": gpu / 10.0, "kernels": kernels}


# 10 ms of GPU time: 9.5 in spans, 0.5 outside them.
XMMA = "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc"
DOC = {
    "kind": "glassbox.kernels", "network": "Block", "batch": 256, "device": "cuda:0",
    "device_name": "NVIDIA H100 80GB HBM3", "runtime": {"precision": "bf16 (mixed: fp32 master weights)"},
    "records": 9, "attributed_records": 8, "gpu_ms": 10.0, "attributed_ms": 9.5, "unattributed_ms": 0.5,
    "coverage": 0.95, "dropped_records": 0,
    "spans": [
        span("layer1.conv1", "Conv2d", "forward", [kernel(XMMA, "conv implicit GEMM", 1, 3.0)]),
        span("layer1.bn1", "BatchNorm2d", "forward", [kernel("cudnn::bn_fw_tr_1C11_singleread_nhwc", "batch norm", 1, 1.0)],
             runs=["layer1.add", "layer1.relu"]),
        span("layer1.add", "Add", "forward", fused_into="layer1.bn1"),
        span("layer1.relu", "ReLU", "forward", fused_into="layer1.bn1"),
        span("layer1.relu", "ReLU", "backward", fused_into="layer1.bn1"),
        span("layer1.bn1", "BatchNorm2d", "backward", [kernel("cudnn::bn_bw_1C11_singleread_nhwc", "batch norm", 1, 1.5)],
             runs=["layer1.add", "layer1.relu"]),
        span("layer1.conv1", "Conv2d", "backward-data", [kernel("sm90_xmma_dgrad_implicit_gemm", "conv other", 1, 2.0)]),
        span("layer1.conv1", "Conv2d", "backward-weights",
             [kernel("sm90_xmma_wgrad_implicit_gemm", "conv other", 1, 1.5), kernel("elementwise_packed_kernel",
                                                                                   "elementwise", 1, 0.25)]),
        span("sgd", "SGD", "optimizer", [kernel("sgd_momentum_kernel", "optimizer", 1, 0.25)]),
    ],
    "families": [{"family": "conv other", "count": 2, "gpu_ms": 3.5, "share": 0.35},
                 {"family": "conv implicit GEMM", "count": 1, "gpu_ms": 3.0, "share": 0.3},
                 {"family": "batch norm", "count": 2, "gpu_ms": 2.5, "share": 0.25},
                 {"family": "copy/memset", "count": 1, "gpu_ms": 0.5, "share": 0.05},
                 {"family": "elementwise", "count": 1, "gpu_ms": 0.25, "share": 0.025},
                 {"family": "optimizer", "count": 1, "gpu_ms": 0.25, "share": 0.025}],
    "unattributed": [kernel("memset", "copy/memset", 1, 0.5)],
}


def run(doc, *flags):
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "block.kernels.json")
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return subprocess.run([sys.executable, TOOL, path, *flags], capture_output=True, text=True)


def section(output, title):
    """The text under `### title`, up to the next section."""
    start = output.index("### " + title)
    end = output.find("\n### ", start + 1)
    return output[start:end if end >= 0 else len(output)]


class KernelsSummary(unittest.TestCase):
    def test_header_and_passes(self):
        r = run(DOC)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Block, batch 256, bf16 (mixed: fp32 master weights), on cuda:0 (NVIDIA H100 80GB HBM3): "
                      "9 records (kernels, copies, sets), 10.000 ms of GPU time, 95.0% of it in a layer's pass",
                      r.stdout)
        passes = section(r.stdout, "GPU time per pass")
        self.assertIn("| forward | 2 | 4.000 | 40.0% |", passes)
        self.assertIn("| backward | 1 | 1.500 | 15.0% |", passes)
        self.assertIn("| backward-weights | 2 | 1.750 | 17.5% |", passes)
        self.assertIn("| optimizer | 1 | 0.250 | 2.5% |", passes)
        self.assertIn("| outside every span | 1 | 0.500 | 5.0% |", passes)

    def test_types_say_where_a_fused_pass_runs(self):
        types = section(run(DOC).stdout, "Per layer type")
        self.assertIn("| ReLU | forward | 1 | 0 | 0.000 | 0.0% | 1 in BatchNorm2d |", types)
        self.assertIn("| Add | forward | 1 | 0 | 0.000 | 0.0% | 1 in BatchNorm2d |", types)
        self.assertIn("| ReLU | backward | 1 | 0 | 0.000 | 0.0% | 1 in BatchNorm2d |", types)
        rows = [line for line in types.splitlines() if line.startswith("| ") and "layer type" not in line]
        self.assertTrue(rows[0].startswith("| Conv2d | forward |"), "most GPU time first: " + rows[0])

    def test_fused_passes_name_their_kernels(self):
        fused = section(run(DOC).stdout, "Fused passes and their kernels")
        self.assertIn("| BatchNorm2d forward + Add + ReLU | 1 | `cudnn::bn_fw_tr_1C11_singleread_nhwc` | batch norm "
                      "| 1 | 1.000 | 10.0% |", fused)
        self.assertIn("| BatchNorm2d backward + Add + ReLU | 1 | `cudnn::bn_bw_1C11_singleread_nhwc` |", fused)
        unfused = json.loads(json.dumps(DOC))
        for s in unfused["spans"]:
            s["runs"], s["fused_into"] = [], ""
        self.assertIn("nothing is fused in this step", section(run(unfused).stdout, "Fused passes"))

    def test_longest_kernels_and_families(self):
        r = run(DOC, "--top", "2")
        longest = section(r.stdout, "Longest kernels")
        self.assertIn(f"| `{XMMA}` | conv implicit GEMM | 1 | 3.000 | 30.0% | Conv2d forward |", longest)
        self.assertIn("| `sm90_xmma_dgrad_implicit_gemm` |", longest)
        self.assertNotIn("wgrad", longest)
        self.assertIn("| conv other | 2 | 3.500 | 35.0% |", section(r.stdout, "Kernel families"))
        self.assertIn("| `memset` | copy/memset | 1 | 0.500 | 5.0% |", section(r.stdout, "Outside every span"))

    def test_longest_kernels_are_counted_by_their_uncapped_name(self):
        # Two spans launch one kernel ("kernel" the same, first records'
        # full names differing): one row. Two kernels whose short names are
        # one within the cut ("kernel" differs): two rows.
        doc = json.loads(json.dumps(DOC))
        capped = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_warpgroupsize1x1x1_execute_segment_k_o..."
        for i, s in enumerate(doc["spans"][:3]):
            one = dict(kernel("anon::elementwise_packed_kernel", "elementwise", 1, 0.01),
                       full_name=f"void anon::elementwise_packed_kernel<T{i}>()",
                       kernel="anon::elementwise_packed_kernel")
            tile = dict(kernel(capped, "GEMM", 1, 0.02), kernel=capped[:-3] + f"ff_tilesize{i}_kernel")
            s["kernels"] = s["kernels"] + [one, tile]
        longest = section(run(doc, "--top", "20").stdout, "Longest kernels")
        self.assertEqual(longest.count("`anon::elementwise_packed_kernel`"), 1, longest)
        self.assertIn("| `anon::elementwise_packed_kernel` | elementwise | 3 | 0.030 |", longest)
        self.assertEqual(longest.count(f"`{capped}`"), 3, longest)

    def test_layers_walk_every_kernel_in_step_order(self):
        r = run(DOC, "--layers", r"^layer1\.(bn1|relu)$")
        walk = section(r.stdout, "Every kernel of the layers matching")
        rows = [line for line in walk.splitlines() if line.startswith("| ") and "| layer |" not in line]
        self.assertEqual(len(rows), 4, walk)
        self.assertTrue(rows[0].startswith("| layer1.bn1 | BatchNorm2d | forward | `cudnn::bn_fw_tr"), rows[0])
        self.assertIn("| layer1.relu | ReLU | forward | (run by layer1.bn1) |", rows[1])
        self.assertIn("No layer's name matches", run(DOC, "--layers", "^nothing$").stdout)
        self.assertNotIn("Every kernel of the layers", run(DOC).stdout)

    def test_out_writes_the_same_tables_whole(self):
        with tempfile.TemporaryDirectory() as root:
            out = os.path.join(root, "block.md")
            r = run(DOC, "--out", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, "")
            with open(out) as f:
                self.assertEqual(f.read(), run(DOC).stdout)
            self.assertEqual(sorted(os.listdir(root)), ["block.md"])
            r = run(DOC, "--out", os.path.join(root, "no-such-folder", "block.md"))
            self.assertEqual(r.returncode, 1)
            self.assertIn("cannot write", r.stderr)
            self.assertEqual(sorted(os.listdir(root)), ["block.md"])

    def test_out_that_is_the_input_is_refused(self):
        with tempfile.TemporaryDirectory() as root:
            path = os.path.join(root, "block.kernels.json")
            with open(path, "w") as f:
                json.dump(DOC, f)
            for out in (path, os.path.join(root, ".", "block.kernels.json")):
                r = subprocess.run([sys.executable, TOOL, path, "--out", out], capture_output=True, text=True)
                self.assertEqual(r.returncode, 1)
                self.assertIn(f"kernels_summary.py: --out {out} is the input file", r.stderr)
                with open(path) as f:
                    self.assertEqual(json.load(f), DOC)
                self.assertEqual(os.listdir(root), ["block.kernels.json"])

    def test_bad_input_is_named(self):
        r = run("{ not json")
        self.assertEqual(r.returncode, 1)
        self.assertIn("block.kernels.json: not a `glassbox kernels --json` file", r.stderr)
        r = run({"kind": "glassbox.time"})
        self.assertEqual(r.returncode, 1)
        self.assertIn("its kind is 'glassbox.time', not 'glassbox.kernels'", r.stderr)
        missing = json.loads(json.dumps(DOC))
        del missing["spans"][0]["kernels"]
        self.assertIn("(no field spans[0].kernels)", run(missing).stderr)
        r = run(DOC, "--layers", "(")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--layers '(' is not a regular expression", r.stderr)

    def test_every_entry_the_tables_read_is_checked(self):
        """A wrong entry anywhere is one line naming the file and the field's path, never a traceback."""

        def bad(change, message, *flags):
            doc = json.loads(json.dumps(DOC))
            change(doc)
            r = run(doc, *flags)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertNotIn("Traceback", r.stderr)
            self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
            self.assertIn("block.kernels.json: not a `glassbox kernels --json` file (" + message + ")", r.stderr)

        bad(lambda d: d["spans"][7]["kernels"][1].pop("count"), "no field spans[7].kernels[1].count")
        bad(lambda d: d["spans"][0]["kernels"][0].pop("gpu_ms"), "no field spans[0].kernels[0].gpu_ms")
        bad(lambda d: d["families"][2].pop("gpu_ms"), "no field families[2].gpu_ms")
        bad(lambda d: d["families"][0].pop("count"), "no field families[0].count")
        bad(lambda d: d["unattributed"][0].pop("count"), "no field unattributed[0].count")
        bad(lambda d: d["spans"][0].update(kernels=None), "field spans[0].kernels must be an array, got null")
        bad(lambda d: d.update(gpu_ms="fast"), 'field gpu_ms must be a number, 0 or more, got string "fast"')
        bad(lambda d: d["spans"][1].update(gpu_ms="1.0"),
            'field spans[1].gpu_ms must be a number, 0 or more, got string "1.0"')
        bad(lambda d: d["spans"][0]["kernels"][0].update(count=1.5),
            "field spans[0].kernels[0].count must be a whole number, 0 or more, got number 1.5")
        bad(lambda d: d["spans"][0].update(layer=5), "field spans[0].layer must be a string, got number 5",
            "--layers", "conv")
        bad(lambda d: d["spans"][1].update(runs="layer1.add"), 'field spans[1].runs must be an array, got string "layer1.add"')
        bad(lambda d: d["spans"][1].update(runs=[3]), "field spans[1].runs[0] must be a string, got number 3")
        bad(lambda d: d.update(spans={"a": 1}), 'field spans must be an array, got object {"a": 1}')
        bad(lambda d: d.update(runtime="bf16"), 'field runtime must be an object, got string "bf16"')
        bad(lambda d: d["unattributed"].append("memset"), 'field unattributed[1] must be an object, got string "memset"')
        # Times are 0 or more, the batch 1 or more and whole: a negative figure is never printed.
        bad(lambda d: d.update(gpu_ms=-10.0), "field gpu_ms must be a number, 0 or more, got number -10.0")
        bad(lambda d: d.update(attributed_ms=-1), "field attributed_ms must be a number, 0 or more, got number -1")
        bad(lambda d: d.update(unattributed_ms=-1),
            "field unattributed_ms must be a number, 0 or more, got number -1")
        bad(lambda d: d["spans"][2].update(gpu_ms=-1),
            "field spans[2].gpu_ms must be a number, 0 or more, got number -1")
        bad(lambda d: d["spans"][0]["kernels"][0].update(gpu_ms=-0.5),
            "field spans[0].kernels[0].gpu_ms must be a number, 0 or more, got number -0.5")
        bad(lambda d: d["families"][1].update(gpu_ms=-3),
            "field families[1].gpu_ms must be a number, 0 or more, got number -3")
        bad(lambda d: d["unattributed"][0].update(gpu_ms=-0.5),
            "field unattributed[0].gpu_ms must be a number, 0 or more, got number -0.5")
        for batch, got in ((-3, "number -3"), (0, "number 0"), (2.5, "number 2.5"), ("256", 'string "256"')):
            bad(lambda d: d.update(batch=batch), "field batch must be a whole number, 1 or more, got " + got)
        # A pass the step does not have would drop out of the per-pass table, and the shares would not add up.
        bad(lambda d: d["spans"][3].update({"pass": "recompute"}), 'field spans[3].pass must be one of forward, '
            'backward-data, backward-weights, backward, optimizer, got string "recompute"')
        bad(lambda d: d["spans"][3].update({"pass": 3}), 'field spans[3].pass must be one of forward, '
            'backward-data, backward-weights, backward, optimizer, got number 3')
        r = run("[1, 2]")
        self.assertEqual(r.returncode, 1)
        self.assertIn("(the top level is a JSON array, not an object)", r.stderr)
        r = run('{"kind": "glassbox.kernels", "gpu_ms": NaN}')
        self.assertIn("(no field network)", r.stderr)
        nan = json.dumps(DOC).replace('"gpu_ms": 10.0', '"gpu_ms": NaN')
        self.assertIn("(field gpu_ms must be a number, 0 or more, got number NaN)", run(nan).stderr)
        r = subprocess.run([sys.executable, TOOL, "no-such.kernels.json"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "kernels_summary.py: no-such.kernels.json: cannot read it (No such file or directory)\n")

    def test_a_whole_batch_given_as_a_float_prints_whole(self):
        self.assertIn("Block, batch 256, bf16", run(dict(DOC, batch=256.0)).stdout)

    def test_a_closed_stdout_is_one_line_and_exit_1(self):
        """A reader that stops early (`| head`) ends the run as Glassbox's programs do: no traceback."""
        with tempfile.TemporaryDirectory() as root:
            path = os.path.join(root, "block.kernels.json")
            with open(path, "w") as f:
                json.dump(DOC, f)
            read, write = os.pipe()
            os.close(read)  # closed before the script writes: every write fails with EPIPE
            try:
                r = subprocess.run([sys.executable, TOOL, path], stdout=write, stderr=subprocess.PIPE, text=True)
            finally:
                os.close(write)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr,
                         "kernels_summary.py: standard output is incomplete: writing it failed (broken pipe)\n")

    def test_optional_fields_may_be_absent_or_null(self):
        doc = json.loads(json.dumps(DOC))
        doc["runtime"] = None
        doc["device_name"] = None
        del doc["dropped_records"]
        for s in doc["spans"]:
            s["type"], s["fused_into"] = None, None
            del s["runs"]
            for k in s["kernels"]:
                del k["family"]
        r = run(doc, "--layers", "conv1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Block, batch 256, on cuda:0 (): 9 records", r.stdout)
        self.assertIn("nothing is fused in this step", r.stdout)


if __name__ == "__main__":
    unittest.main()
