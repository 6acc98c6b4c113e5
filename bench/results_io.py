"""bench/results_io.py: what the benchmark scripts share in reading their
inputs and writing their outputs, so that a bad file, option or program is
one line naming it (BadInput), found before a long run starts where it can be.

- load_json: a file's JSON (missing, empty, not UTF-8 or not JSON: BadInput).
- check_benchmarks: a Google Benchmark "benchmarks" list as bench/compare.py
  and bench/interleave.py read it: names are strings, and every rate a run
  reports (images/s, tokens/s) is a finite number above 0, every other
  figure (TFLOP/s, peak_memory, times) a finite number, 0 or more.
- check_rounds, check_rows: a bench/interleave.py (or merge_results.py)
  file's rounds and rows, with its benchmarks named NET/MODE/batch:N[/...].
- part_commands, check_one_table: the interleave.py commands a results
  file's parts ran, and whether parts ran with one set of settings and in
  one environment (one table), naming the first difference where not.
- check_output, check_programs, distinct_files: an output that is a folder,
  lies in a missing folder or is one of the inputs; a program that cannot
  be run; a file given twice.
- positive_int, count, positive_float: argparse types that refuse 0, -1, nan.
- write_json, write_text: whole or not at all, no temporary left behind.

Standard library only: the scripts that read results run without PyTorch.
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess


class BadInput(Exception):
    """One line: the file, option or program, and what is wrong with it."""


# bench_nets' and the peers' names: network, mode, batch, then any of the
# precision (/bf16), /deterministic, /ranks:N, /real_data, the peer's layout
# (/channels_last) and torch.compile's /compiled.
BENCHMARK_NAME = re.compile(r"[^/\s]+/[^/\s]+/batch:[0-9]+(/[^/\s]+)*")
RATES = ("images/s", "tokens/s")
FIGURES = ("TFLOP/s", "peak_memory", "real_time", "cpu_time")


def shown(value):
    """A JSON value in a message, cut to 40 characters."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {dict: "object", list: "array", str: "string"}.get(type(value), "number")


def is_number(value, above_zero):
    """A finite JSON number (a boolean is not one), above 0 or 0 or more."""
    return (not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
            and (value > 0 if above_zero else value >= 0))


def check_number(value, where, above_zero=True, null=False):
    if value is None and null:
        return
    if not is_number(value, above_zero):
        raise BadInput(f"{where} is {shown(value)}, not a number " + ("above 0" if above_zero else "of 0 or more"))


def check_threads(value, where):
    """A count of CPU threads: a whole JSON number above 0 (a boolean is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadInput(f"{where} is {shown(value)}, not a whole number above 0")


def load_json(path, named=None):
    """The file's JSON; `named` is how messages call it (default: its path)."""
    named = named or path
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise BadInput(f"{named} is not UTF-8 text (byte {e.start} is {e.object[e.start:e.start + 1]!r})")
    except OSError as e:
        raise BadInput(f"cannot read {named}: {e.strerror or e}")
    if not text.strip():
        raise BadInput(f"{named} is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInput(f"{named} is not JSON: {e}")


def check_benchmarks(where, benchmarks):
    """A "benchmarks" list: each run an object with a string name; a run that
    did not fail reports each rate above 0 (an aggregate other than the mean
    or median, such as stddev, 0 or more) and each other figure 0 or more."""
    if not isinstance(benchmarks, list):
        raise BadInput(f"{where}: \"benchmarks\" is a JSON {json_type(benchmarks)}, not an array")
    for i, run in enumerate(benchmarks):
        if not isinstance(run, dict):
            raise BadInput(f"{where}: benchmarks[{i}] is a JSON {json_type(run)}, not an object")
        for key in ("name", "run_name", "run_type", "aggregate_name"):
            if key in run and not isinstance(run[key], str):
                raise BadInput(f"{where}: benchmarks[{i}].{key} is {shown(run[key])}, not a string")
        if not isinstance(run.get("name"), str):
            raise BadInput(f"{where}: benchmarks[{i}] has no \"name\"")
        if run.get("error_occurred"):
            continue
        spread = run.get("run_type") == "aggregate" and run.get("aggregate_name") not in ("mean", "median")
        for key in RATES + FIGURES:
            if key in run:
                check_number(run[key], f"{where}: benchmark {run['name']}: \"{key}\"",
                             above_zero=key in RATES and not spread)


def check_rounds(path, data):
    """A bench/interleave.py or merge_results.py file's contents, checked for
    what the tables read: rounds of {"glassbox", "pytorch": {name: rate}}
    with rates above 0, an optional "load" {side: {name: busy CPUs or
    null}} and an optional "threads" {side: {name: CPU threads, a whole
    number above 0}}; "builds" and "environment" objects, "machine" a string. A file
    with nothing measured in any round is refused too. Returns data."""
    if not isinstance(data, dict):
        raise BadInput(f"{path} holds a JSON {json_type(data)}, not bench/interleave.py's object")
    rounds = data.get("rounds")
    if not isinstance(rounds, list):
        if "benchmarks" in data:
            raise BadInput(f"{path} is one side's Google Benchmark JSON, not bench/interleave.py's (no \"rounds\"); "
                           "bench/compare.py GLASSBOX_JSON PYTORCH_JSON --out FILE pairs two sides into one file")
        raise BadInput(f"{path} is not bench/interleave.py's JSON (no \"rounds\" list)")
    for i, rnd in enumerate(rounds, 1):
        if not isinstance(rnd, dict):
            raise BadInput(f"{path}: round {i} is a JSON {json_type(rnd)}, not an object")
        for side in ("glassbox", "pytorch"):
            found = rnd.get(side)
            if not isinstance(found, dict):
                raise BadInput(f"{path}: round {i} has no \"{side}\" object")
            for name, value in found.items():
                if not BENCHMARK_NAME.fullmatch(name):
                    raise BadInput(f"{path}: round {i}: {side}'s benchmark {name!r} is not named "
                                   "NET/MODE/batch:N[/...]")
                check_number(value, f"{path}: round {i}: {side}'s {name}")
        load = rnd.get("load", {})
        if not isinstance(load, dict) or not all(isinstance(v, dict) for v in load.values()):
            raise BadInput(f"{path}: round {i}: \"load\" is not {{side: {{name: busy CPUs}}}}")
        for side, names in load.items():
            for name, value in names.items():
                check_number(value, f"{path}: round {i}: the load around {side}'s {name}", above_zero=False, null=True)
        threads = rnd.get("threads", {})
        if not isinstance(threads, dict) or not all(isinstance(v, dict) for v in threads.values()):
            raise BadInput(f"{path}: round {i}: \"threads\" is not {{side: {{name: CPU threads}}}}")
        for side, names in threads.items():
            for name, value in names.items():
                check_threads(value, f"{path}: round {i}: the threads of {side}'s {name}")
    if not any(rnd["glassbox"] or rnd["pytorch"] for rnd in rounds):
        raise BadInput(f"{path}: no round holds a measurement")
    for key in ("builds", "environment"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise BadInput(f"{path}: \"{key}\" is a JSON {json_type(data[key])}, not an object")
    for key, value in (data.get("builds") or {}).items():
        if not isinstance(value, str):
            raise BadInput(f"{path}: builds.{key} is {shown(value)}, not a string")
    if data.get("machine") is not None and not isinstance(data["machine"], str):
        raise BadInput(f"{path}: \"machine\" is {shown(data['machine'])}, not a string")
    return data


# What each field of a row must be (bench/interleave.py's rows_from_rounds):
# (positive number, 0 or more, CPU threads, or a kind), each may be null unless required.
ROW_FIELDS = {"glassbox_images_per_s": "rate", "pytorch_images_per_s": "rate", "ratio": "rate",
              "pytorch_compiled_images_per_s": "rate", "ratio_compiled": "rate", "busiest_cpus": "load",
              "glassbox_threads": "threads", "pytorch_layout": str, "busy": bool}


def check_rows(path, rows, needed=("name",)):
    """A file's "rows", each an object with a string name and the fields in
    `needed` present; each field ROW_FIELDS names is of its kind or null."""
    if not isinstance(rows, list):
        raise BadInput(f"{path}: \"rows\" is a JSON {json_type(rows)}, not an array")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise BadInput(f"{path}: rows[{i}] is a JSON {json_type(row)}, not an object")
        if not isinstance(row.get("name"), str):
            raise BadInput(f"{path}: rows[{i}] has no string \"name\"")
        for key in needed:
            if key not in row:
                raise BadInput(f"{path}: row {row['name']} has no \"{key}\"")
        for key, kind in ROW_FIELDS.items():
            value = row.get(key)
            if value is None:
                continue
            if kind == "threads":
                check_threads(value, f"{path}: row {row['name']}: \"{key}\"")
            elif kind in ("rate", "load"):
                check_number(value, f"{path}: row {row['name']}: \"{key}\"", above_zero=kind == "rate")
            elif not isinstance(value, kind):
                raise BadInput(f"{path}: row {row['name']}: \"{key}\" is {shown(value)}, not a JSON "
                               + ("string" if kind is str else "boolean"))
    return rows


def part_commands(path, data):
    """[(where, command)] of a results file: each part's command where it is a
    merged file (bench/merge_results.py's "parts"), its own otherwise (None
    where it records none: a bench/compare.py file); where names the file,
    and the part of a merged one. A "parts" that is not a list of objects
    with a list for a command, or a "command" that is not a list, is BadInput."""
    parts = data.get("parts")
    if not parts:
        if data.get("command") is not None and not isinstance(data["command"], list):
            raise BadInput(f"{path}: \"command\" is not a list of the command's arguments")
        return [(path, data.get("command"))]
    if not isinstance(parts, list) or not all(isinstance(p, dict) and isinstance(p.get("command", []), list)
                                              for p in parts):
        raise BadInput(f"{path}: \"parts\" is not a list of {{\"date\", \"command\"}} objects, each command a list")
    return [(path if len(parts) == 1 else f"{path} (part {i + 1})", part.get("command"))
            for i, part in enumerate(parts)]


def option_text(value):
    """An option's value in a message."""
    if value is None:
        return "left out"
    if isinstance(value, bool):
        return "given" if value else "not given"
    return str(value)


def environment_text(environment):
    """A recorded environment in a message."""
    return ", ".join(f"{k}={v}" for k, v in environment.items()) if environment else "none of its variables set"


def check_one_table(parts):
    """Refuses parts (files, or the parts of merged files) that ran with
    different settings or in different environments (bench/interleave.py's
    "environment": variables that cap either side's kernels): their rows are
    not one table (Note [One build per table] in bench/interleave.py). parts:
    (where, settings, environment) each, where names the file (and the part
    of a merged file), settings (interleave.settings) None where its command
    cannot be read, environment None where it recorded none."""
    first = parts[0]
    for other in parts[1:]:
        if first[1] is None or other[1] is None:
            unread = first if first[1] is None else other
            raise BadInput(f"{unread[0]} records no bench/interleave.py command that can be read, so its settings "
                           f"cannot be checked against {(other if unread is first else first)[0]}'s")
        differ = [f"--{name.replace('_', '-')}: {option_text(first[1][name])} in {first[0]}, "
                  f"{option_text(other[1].get(name))} in {other[0]}"
                  for name in first[1] if first[1][name] != other[1].get(name)]
        if differ:
            raise BadInput(f"{first[0]} and {other[0]} ran with different settings, not one table: "
                           + "; ".join(differ))
        if first[2] != other[2]:
            if first[2] is None or other[2] is None:
                unrecorded, recorded = (first, other) if first[2] is None else (other, first)
                raise BadInput(f"{first[0]} and {other[0]} may have run in different environments: {unrecorded[0]} "
                               "recorded none (it ran before bench/interleave.py recorded one), "
                               f"{recorded[0]} ran with {environment_text(recorded[2])}; bench/merge_results.py "
                               "--environment names it for the parts that recorded none")
            differ = [f"{name}: {first[2].get(name, 'unset')} in {first[0]}, {other[2].get(name, 'unset')} in "
                      f"{other[0]}" for name in sorted(set(first[2]) | set(other[2]))
                      if first[2].get(name) != other[2].get(name)]
            raise BadInput(f"{first[0]} and {other[0]} ran in different environments (variables that cap either "
                           "side's kernels), not one table: " + "; ".join(differ))


def same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def check_output(path, option, inputs=(), make_folder=False):
    """Refuses an output that is a folder, one of the inputs, or (unless the
    script makes it) in a folder that does not exist: before a long run, not
    after it."""
    if os.path.isdir(path):
        raise BadInput(f"{option} {path} is a folder, not a file")
    for given in inputs:
        if same_file(path, given):
            raise BadInput(f"{option} {path} is also an input ({given}): writing it would overwrite that")
    folder = os.path.dirname(path) or "."
    if not make_folder and not os.path.isdir(folder):
        raise BadInput(f"{option} {path}: there is no folder {folder}")


def check_programs(programs):
    """programs: (option, program) pairs; refuses one that cannot be run (not
    found on PATH or at that path, or not executable)."""
    for option, program in programs:
        if shutil.which(program) is None:
            raise BadInput(f"{option} {program}: no such program (not found, or not executable)")


def run_program(command, **options):
    """subprocess.run, with a program that cannot be started a BadInput."""
    try:
        return subprocess.run(command, **options)
    except OSError as e:
        raise BadInput(f"cannot run {command[0]}: {e.strerror or e}")


def distinct_files(paths):
    """Refuses a file given twice (by any name)."""
    for i, path in enumerate(paths):
        for earlier in paths[:i]:
            if same_file(path, earlier):
                raise BadInput(f"{path} is given twice ({earlier}): its rounds would count twice")


def whole_number(text, least):
    """`text` as a whole number of at least `least`, or argparse's error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    if value < least:
        raise argparse.ArgumentTypeError(f"must be {least} or more, got {value}")
    return value


def positive_int(text):
    """An argparse type: a whole number, 1 or more."""
    return whole_number(text, 1)


def count(text):
    """An argparse type: a whole number, 0 or more."""
    return whole_number(text, 0)


def positive_float(text):
    """An argparse type: a finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number")
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {text}")
    return value


def number_from(least, most=math.inf):
    """An argparse type: a finite number from `least` to `most` (NaN and infinity refused: compared with
    a threshold, NaN would turn the check it sets off without a word)."""
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number")
        if not (math.isfinite(value) and least <= value <= most):
            bounds = f" from {least:g} to {most:g}" if math.isfinite(most) else f", {least:g} or more"
            raise argparse.ArgumentTypeError(f"must be a finite number{bounds}, got {text}")
        return value
    return parse


def write_whole(path, write, named=None):
    """write(temporary path), then the temporary renamed over `path`: whole or
    not at all, the temporary removed where writing or renaming fails. An
    OSError is BadInput naming the file (`named`: how, e.g. "--save PATH")."""
    temporary = path + ".tmp"
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException as e:
        if os.path.isfile(temporary):
            os.remove(temporary)
        if isinstance(e, OSError):
            raise BadInput(f"{named}: cannot write: {e.strerror or e}" if named
                           else f"cannot write {path}: {e.strerror or e}") from e
        raise


def write_text(path, text):
    """`text` into `path`, whole or not at all (write_whole)."""
    def write(temporary):
        with open(temporary, "w") as f:
            f.write(text)
    write_whole(path, write)


def write_json(path, payload):
    write_text(path, json.dumps(payload, indent=1))
