#!/usr/bin/env python3
"""tools/plot_training.py: loss and accuracy curves from training logs.

Reads one or more JSON-lines logs as `glassbox train --log FILE` writes them
(bench/peers/pytorch_train.py --log writes the same lines), and draws, per
epoch, the training and test loss (left) and accuracy (right) of each, into
one image (--out's extension names its format: .png, .svg, .pdf; PNG where it
has none); for a language model's logs the right panel is the train, valid and
test perplexity. With --steps, the per-step losses (glassbox train --log-every N)
are drawn under the epoch curves.

A resumed run appends to its log and logs again from its checkpoint: a later
epoch line for an epoch replaces an earlier one, and a later step line for a
global step replaces an earlier one, so each curve has one point per epoch or
step. A line a killed run left unfinished (not JSON) is skipped, saying so,
but a log's first line must be a JSON object (a pretty-printed JSON file is
not a training log); a null loss or accuracy (glassbox writes NaN and
infinity as null) is a gap in its curve. Any other line that is not what
the writers write is an error naming the file and line, exit code 1, as are
a log that cannot be read and an --out that cannot be written; an --out that
is one of the logs is refused (exit code 2) before any log is read. The
image is drawn whole into a temporary file beside --out, then renamed.

Usage:
  python3 tools/plot_training.py LOG [LOG ...] --out curves.png [--title TEXT] [--steps]
  (each LOG may be given as LABEL=PATH; the label defaults to the file name)

Needs matplotlib (pip install matplotlib), which Glassbox itself never needs.
"""

import argparse
import json
import math
import os
import sys


class LogError(Exception):
    """What is wrong with a log, as "FILE:LINE: what"."""


def json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {dict: "an object", list: "an array", str: "a string"}.get(type(value), "a number")


def article(event):
    return ("an " if event[0] in "aeiou" else "a ") + event


def whole(line, key, where):
    """line[key], a whole number (epoch, global_step)."""
    if key not in line:
        raise LogError(f"{where}: {article(line['event'])} line without \"{key}\"")
    value = line[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value != int(value):
        raise LogError(f"{where}: \"{key}\" must be a whole number, got {json.dumps(value)}")
    return int(value)


def measure(line, key, where, required):
    """line[key] as a float: a loss or accuracy; null (NaN or infinity in the
    run) is NaN, a gap in the curve."""
    if key not in line:
        if required:
            raise LogError(f"{where}: {article(line['event'])} line without \"{key}\"")
        return None
    value = line[key]
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise LogError(f"{where}: \"{key}\" must be a number or null, got {json_type(value)} {json.dumps(value)}")
    return float(value)


def read_log(path):
    """(epochs, steps, start) from one log: epochs and steps in order, each a
    dict of the fields drawn with the log line it came from ("line").

    A resumed run's lines append; a later line for an epoch replaces an
    earlier one, and so does a later step line for a global step (the resumed
    run logs again the steps after its checkpoint). Raises LogError."""
    epochs, steps, start = {}, {}, {}
    seen = False  # a JSON object line read
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise LogError(f"{path}: cannot read it ({e.strerror or e})")
    for number, raw in enumerate(data.splitlines(), 1):
        where = f"{path}:{number}"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            if e.end < len(raw.rstrip(b"\r")) or e.reason != "unexpected end of data":
                raise LogError(f"{where}: not UTF-8 text (byte {raw[e.start]:#04x}): not a training log?")
            text = raw.decode("utf-8", errors="replace")  # cut mid-character: an unfinished line, not JSON below
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except json.JSONDecodeError as e:
            # A log's lines each start an object, '{"': a first line that is not JSON and does not (a
            # pretty-printed file's lone "{") is another kind of file; one that does was cut by a killed run.
            if not seen and not text.lstrip().startswith('{"'):
                raise LogError(f"{where}: not JSON ({e.msg}): not a training log (one JSON object a line)")
            # A run killed mid-write leaves one unfinished line; say so and go on.
            print(f"plot_training.py: {where}: skipped, not JSON ({e.msg}): a run killed mid-line?",
                  file=sys.stderr)
            continue
        if not isinstance(line, dict):
            raise LogError(f"{where}: {json_type(line)}, not an object: not a training log line")
        seen = True
        event = line.get("event")
        if event == "epoch":
            epoch = {"line": number, "epoch": whole(line, "epoch", where)}
            if "global_step" in line:
                epoch["global_step"] = whole(line, "global_step", where)
            for key in ("train_loss", "train_accuracy", "test_loss", "test_accuracy", "train_perplexity",
                        "valid_perplexity", "test_perplexity"):
                epoch[key] = measure(line, key, where, required=key == "train_loss")
            # An image classifier's line scores accuracy; a language model's, perplexity.
            if epoch["train_accuracy"] is None and epoch["train_perplexity"] is None:
                raise LogError(f'{where}: an epoch line without "train_accuracy" or "train_perplexity"')
            epochs[epoch["epoch"]] = epoch
        elif event == "step":
            step = {"line": number, "global_step": whole(line, "global_step", where),
                    "loss": measure(line, "loss", where, required=True)}
            steps[step["global_step"]] = step
        elif event == "start":
            start = line
    return [epochs[e] for e in sorted(epochs)], [steps[s] for s in sorted(steps)], start


def steps_per_epoch(path, epochs):
    """Global steps per epoch, from the first epoch line, to place the step
    losses on the epoch axis. Raises LogError."""
    first = epochs[0]
    where = f"{path}:{first['line']}"
    if "global_step" not in first:
        raise LogError(f"{where}: --steps needs \"global_step\" in the epoch lines, to place the steps")
    if first["epoch"] < 1 or first["global_step"] < 1:
        raise LogError(f"{where}: epoch {first['epoch']} at global step {first['global_step']}: --steps needs "
                       "epochs numbered from 1, ending after 1 step or more, to place the steps")
    return first["global_step"] / first["epoch"]


def right_panel(logs, runs):
    """Whether the right panel is perplexity (language models' logs) rather
    than accuracy (image classifiers'). Raises LogError for a mix."""
    kinds = ["perplexity" if epochs[0]["train_perplexity"] is not None else "accuracy" for _, epochs, _, _ in runs]
    for log, kind in zip(logs, kinds):
        if kind != kinds[0]:
            raise LogError(f"{logs[0]} scores {kinds[0]} and {log} {kind}: plot a language model's logs apart "
                           "from an image classifier's")
    return kinds[0] == "perplexity"


def same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def check_out(path):
    """Raises LogError where the image cannot be written, before any drawing."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise LogError(f"cannot write {path}: it is a folder")
    if not os.path.isdir(folder):
        raise LogError(f"cannot write {path}: no folder {folder}")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise LogError(f"cannot write {path}: permission denied")


def main():
    parser = argparse.ArgumentParser(prog="plot_training.py", description=__doc__.split("\n")[0])
    parser.add_argument("logs", nargs="+", metavar="[LABEL=]LOG")
    parser.add_argument("--out", required=True,
                        help="the image to write; its extension names the format (.png, .svg, .pdf; none: PNG)")
    parser.add_argument("--title")
    parser.add_argument("--steps", action="store_true", help="also draw the per-step losses")
    args = parser.parse_args()
    logs = [entry.split("=", 1) if "=" in entry and not os.path.exists(entry) else (None, entry)
            for entry in args.logs]
    for _, path in logs:
        if same_file(args.out, path):
            parser.error(f"--out {args.out} is the log {path}: writing it would overwrite the log")

    # Read and check every log, and the output's folder, before drawing anything.
    runs = []
    try:
        for label, path in logs:
            epochs, steps, start = read_log(path)
            if not epochs:
                raise LogError(f"{path} has no epoch lines")
            per_epoch = steps_per_epoch(path, epochs) if args.steps and steps else None
            runs.append((label or os.path.basename(path), epochs, steps, per_epoch))
        language_model = right_panel(args.logs, runs)
        check_out(args.out)
    except LogError as e:
        raise SystemExit(f"plot_training.py: {e}")

    try:
        import matplotlib
        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        raise SystemExit("plot_training.py: needs matplotlib (pip install matplotlib)")

    def percent(value):
        return None if value is None else 100 * value

    figure, (loss_axes, accuracy_axes) = plt.subplots(1, 2, figsize=(12, 4.5))
    # The format is --out's extension, given to matplotlib, so that the file it writes is --out itself
    # (left to itself it would write "curves" as "curves.png", and the temporary file as a ".part" image).
    image_format = os.path.splitext(args.out)[1][1:].lower() or "png"
    if image_format not in figure.canvas.get_supported_filetypes():
        raise SystemExit(f"plot_training.py: cannot write {args.out}: matplotlib writes no .{image_format} files "
                         f"(it writes {', '.join(sorted(figure.canvas.get_supported_filetypes()))})")
    for label, epochs, steps, per_epoch in runs:
        x = [e["epoch"] for e in epochs]
        line, = loss_axes.plot(x, [e["train_loss"] for e in epochs], "o--", label=f"{label} train")
        colour = line.get_color()
        # A test curve where any epoch has a test score; an epoch without one is a gap.
        if any(e["test_loss"] is not None for e in epochs):
            loss_axes.plot(x, [e["test_loss"] if e["test_loss"] is not None else math.nan for e in epochs], "o-",
                           color=colour, label=f"{label} test")
        if per_epoch is not None:
            loss_axes.plot([s["global_step"] / per_epoch for s in steps], [s["loss"] for s in steps], "-",
                           color=colour, alpha=0.25, linewidth=0.8)
        if language_model:
            for split, style in (("train", "o--"), ("valid", "s:"), ("test", "o-")):
                key = f"{split}_perplexity"
                if any(e[key] is not None for e in epochs):
                    accuracy_axes.plot(x, [e[key] if e[key] is not None else math.nan for e in epochs], style,
                                       color=colour, label=f"{label} {split}")
            continue
        accuracy_axes.plot(x, [percent(e["train_accuracy"]) for e in epochs], "o--", color=colour,
                           label=f"{label} train")
        if any(e["test_accuracy"] is not None for e in epochs):
            accuracy_axes.plot(x, [percent(e["test_accuracy"]) if e["test_accuracy"] is not None else math.nan
                                   for e in epochs], "o-", color=colour, label=f"{label} test")
    loss_axes.set(xlabel="epoch", ylabel="loss (cross-entropy)", title="loss")
    if language_model:
        accuracy_axes.set(xlabel="epoch", ylabel="perplexity", title="perplexity", yscale="log")
    else:
        accuracy_axes.set(xlabel="epoch", ylabel="accuracy (%)", title="accuracy")
    for axes in (loss_axes, accuracy_axes):
        axes.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))  # epochs are whole
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
    figure.suptitle(args.title or ", ".join(os.path.basename(path) for _, path in logs))
    figure.tight_layout()
    partial = args.out + ".part"
    try:
        with open(partial, "wb") as f:
            figure.savefig(f, format=image_format, dpi=110)
        os.replace(partial, args.out)
    except (OSError, ValueError) as e:  # ValueError: an image matplotlib cannot make
        if os.path.exists(partial):
            os.remove(partial)
        raise SystemExit(f"plot_training.py: cannot write {args.out}: {getattr(e, 'strerror', None) or e}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    try:
        code = main()
        sys.stdout.flush()  # a closed pipe shows here, not in Python's flush at exit
    except BrokenPipeError:
        # The reader closed stdout (`| head`): one line and exit 1, as Glassbox's programs do
        # (tools/entry_point.h); stdout goes to /dev/null so that the flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit("plot_training.py: standard output is incomplete: writing it failed (broken pipe)")
    sys.exit(code)
