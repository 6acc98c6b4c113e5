#!/usr/bin/env python3
"""tests/test_tree_checks.py: tools/product_checks.py and tools/layering.py
fail on a planted violation of each rule they check, and pass a clean tree.
Each check runs on a small tree made here (--root), not on the repository."""
import os
import subprocess
import sys
import tempfile
import unittest

# The planted violations, assembled so that this file does not hold them itself.
ROUND_REFERENCE = "st" + "op 45"
MACHINE_PATH = "/" + "work/venv/bin/python"

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")


def run(tool, root):
    return subprocess.run([sys.executable, os.path.join(TOOLS, tool), "--root", root], capture_output=True, text=True)


def write(root, name, text):
    path = os.path.join(root, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def clean_tree(root):
    write(root, "README.md", "# A product\n")
    write(root, "layers/relu.cpp", '#include "layers/relu.h"\n#include "tensor/tensor.h"\n')
    write(root, "optim/sgd.cpp", '#include "graph/graph.h"\n#include <vector>\n')
    write(root, "train/trainer.cpp", '#include "data/loader.h"\n#include "optim/sgd.h"\n')
    write(root, "bench/results/README.md", "| machine |\n|---|\n| [h100-80gb/](h100-80gb/) |\n")
    for name in ("table.json", "table.md", "README.md", "resnet50-tf32.json"):
        write(root, "bench/results/h100-80gb/" + name, "{}\n")


class ProductChecks(unittest.TestCase):
    def check(self, plant, expected):
        with tempfile.TemporaryDirectory() as root:
            clean_tree(root)
            self.assertEqual(run("product_checks.py", root).returncode, 0, run("product_checks.py", root).stdout)
            plant(root)
            result = run("product_checks.py", root)
            self.assertEqual(result.returncode, 1, result.stdout)
            self.assertIn(expected, result.stdout)

    def test_a_development_round_reference_fails(self):
        self.check(lambda root: write(root, "layers/relu.cpp", "// as measured at " + ROUND_REFERENCE + "\n"),
                   "layers/relu.cpp:1: a development-round reference")

    def test_an_absolute_machine_path_fails(self):
        self.check(lambda root: write(root, "bench/run.py", 'PYTHON = "' + MACHINE_PATH + '"\n'),
                   "bench/run.py:1: an absolute path of a particular machine")

    def test_a_results_file_outside_the_machine_folders_fails(self):
        self.check(lambda root: write(root, "bench/results/2026-11-27-h100.json", "{}\n"),
                   "bench/results/2026-11-27-h100.json: bench/results holds README.md and one folder per machine")

    def test_a_dated_results_file_fails(self):
        self.check(lambda root: write(root, "bench/results/h100-80gb/2026-11-27-lstm.json", "{}\n"),
                   "bench/results/h100-80gb/2026-11-27-lstm.json: a results file is named for what it holds")

    def test_a_machine_folder_without_its_table_or_index_row_fails(self):
        self.check(lambda root: write(root, "bench/results/xeon-2core/table.json", "{}\n"),
                   "bench/results/xeon-2core/table.json: no table.md made from it")
        self.check(lambda root: write(root, "bench/results/xeon-2core/table.json", "{}\n"),
                   "bench/results/xeon-2core/: no README.md")
        self.check(lambda root: write(root, "bench/results/xeon-2core/table.json", "{}\n"),
                   "bench/results/README.md: no row for xeon-2core/")


class Layering(unittest.TestCase):
    def test_a_clean_tree_passes(self):
        with tempfile.TemporaryDirectory() as root:
            clean_tree(root)
            result = run("layering.py", root)
            self.assertEqual(result.returncode, 0, result.stdout)

    def test_an_upward_include_fails(self):
        with tempfile.TemporaryDirectory() as root:
            clean_tree(root)
            write(root, "optim/sgd.cpp", '#include "graph/graph.h"\n#include "data/loader.h"\n')
            result = run("layering.py", root)
            self.assertEqual(result.returncode, 1, result.stdout)
            self.assertIn("optim/sgd.cpp:2: optim includes data", result.stdout)

    def test_a_lower_layer_including_a_higher_one_fails(self):
        with tempfile.TemporaryDirectory() as root:
            clean_tree(root)
            write(root, "layers/conv2d/conv2d.cpp", '#include "graph/graph.h"\n')
            result = run("layering.py", root)
            self.assertEqual(result.returncode, 1, result.stdout)
            self.assertIn("layers/conv2d/conv2d.cpp:1: layers includes graph", result.stdout)


if __name__ == "__main__":
    unittest.main()
