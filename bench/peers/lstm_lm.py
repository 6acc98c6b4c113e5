#!/usr/bin/env python3
"""bench/peers/lstm_lm.py: the PyTorch peer of `glassbox train LSTM...`: the
same language model (peer_language_models.py), trained on the same token
ids with the same schedule, so that the two perplexities can be compared.

The ids come from Glassbox itself, so that both sides read the same data:

    build/glassbox corpus fortunes --out /tmp/fortunes.safetensors
    python3 bench/peers/lstm_lm.py /tmp/fortunes.safetensors \\
        --net LSTMSmall --epochs 4 [--lr 1 --clip 5 --schedule constant|step:E:G] [--threads 1]

What it does, as Glassbox does it (data/bptt.h, train/trainer.h, optim/sgd.h):
  batchify   each split cut into B streams of L = floor(n / B) ids, time-major
  windows    window w: inputs rows wT..wT+T-1, targets the same rows + 1;
             floor((L - 1) / T) whole windows per epoch, in order, the rest dropped
  state      carried from window to window (detached: truncated BPTT), zeros
             at the start of every epoch and of every evaluation
  SGD        plain (no momentum, no weight decay), the gradients' global norm
             clipped to --clip first (torch.nn.utils.clip_grad_norm_)
  schedule   constant, or step:E:G (lr * G^floor(epoch / E)), per epoch
  scores     train perplexity: exp of the mean of the windows' losses;
             valid and test: exp of the mean loss over all their whole windows,
             in eval mode (no dropout)
Prints one row per epoch; --json FILE writes them. Each split must hold B
streams of T + 1 ids at least (one window), as Glassbox requires.

Checkpoints both ways (docs/language_model.md, "Checkpoints in PyTorch"):
  --weights FILE  no training: FILE (a `glassbox train --checkpoint-dir`
                  checkpoint, or any model file `glassbox eval --weights`
                  reads) into the model with load_state_dict(strict=True),
                  then its valid and test perplexity
  --save FILE     after the epochs (--epochs 0: the initial weights), the
                  model's state_dict as safetensors, for `glassbox eval
                  NET --weights FILE --data SPEC`, with the ids file's
                  vocabulary digest in its metadata, which eval checks

--time MODES (no ids file) times steps instead, as bench_nets times them
and as bench/peers/pytorch_nets.py steps (peer_protocol.py): forward
(training mode, with the loss), forward_backward and train_step (each
zeroing the gradients first, set_to_none=True; train_step then steps
peer_protocol.make_sgd's SGD, lr 1e-4, momentum 0.9, weight decay 5e-4:
Glassbox's kBenchmarkSgd, fused where this PyTorch has it) and inference
(eval, inference_mode, with the loss, as Glassbox's inference graph), on
random token ids from a fixed seed and labels n % V, 10 warm-up
steps (--warmup N: N), then timed steps for --min-time seconds (at least 3); --json writes
Google-Benchmark-shaped rows with tokens/s, which bench/interleave.py reads:

    python3 bench/peers/lstm_lm.py --time forward_backward --net LSTM --threads 2

A bad flag is a usage error (exit status 2); an ids or model file that cannot
be read, or does not fit, is one line naming it (exit status 1). Both are
found, and the --json and --save paths checked, before anything is trained.
"""

import argparse
import array
import json
import math
import os
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))  # bench/, for results_io

from peer_language_models import LANGUAGE_MODELS, find_language_model  # noqa: E402
from peer_protocol import MODES, make_sgd  # noqa: E402
from results_io import (BadInput, check_output, count, positive_float, positive_int,  # noqa: E402
                        write_text, write_whole)

PROG = "lstm_lm.py"
SPLITS = ("train", "valid", "test")


def parse_modes(text):
    """--time: modes separated by commas, each one of peer_protocol's MODES (once each, in the order given)."""
    words = [word.strip() for word in text.split(",")]
    if not all(word in MODES for word in words):
        raise BadInput(f"--time {text!r}: expected modes separated by commas, each one of {', '.join(MODES)}")
    return list(dict.fromkeys(words))


def parse_schedule(text):
    """--schedule: None for constant, or (E, G) for step:E:G, as Glassbox takes it (optim/lr_schedule.cpp):
    every E epochs (1 or more) the rate times G (above 0, at most 1)."""
    if text == "constant":
        return None
    parts = text.split(":")
    try:
        every, gamma = int(parts[1]), float(parts[2])
        valid = len(parts) == 3 and parts[0] == "step" and every >= 1 and 0.0 < gamma <= 1.0
    except (IndexError, ValueError):
        valid = False
    if not valid:
        raise BadInput(f"--schedule {text!r}: expected constant or step:EPOCHS:GAMMA, EPOCHS a whole number, "
                       "1 or more, and GAMMA above 0 and at most 1")
    return every, gamma


def read_corpus(path):
    """What `glassbox corpus --out` writes, checked: ({split: its int32 ids as an array}, the vocabulary size,
    its digest (None in an older file)). A file that is not one, or holds an id outside the vocabulary, is
    BadInput naming it."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror or e}")
    not_corpus = f"{path} is not what `glassbox corpus --out` writes"
    if len(data) < 8:
        raise BadInput(f"{not_corpus}: {len(data)} bytes, fewer than a safetensors header's 8-byte length")
    (header_length,) = struct.unpack("<Q", data[:8])
    if header_length > len(data) - 8:
        raise BadInput(f"{not_corpus}: its first 8 bytes give a header of {header_length:,} bytes, past the "
                       f"end of the file ({len(data):,} bytes)")
    try:
        header = json.loads(data[8:8 + header_length].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise BadInput(f"{not_corpus}: its safetensors header is not JSON ({e})")
    metadata = header.pop("__metadata__", None) if isinstance(header, dict) else None
    if not isinstance(metadata, dict) or metadata.get("format") != "glassbox.corpus v1":
        raise BadInput(f"{not_corpus}: no __metadata__ with \"format\": \"glassbox.corpus v1\"")
    if not isinstance(metadata.get("vocabulary"), str):
        raise BadInput(f"{path}: __metadata__ has no \"vocabulary\" (one word per line)")
    vocabulary = len(metadata["vocabulary"].splitlines())
    body = data[8 + header_length:]
    splits = {}
    for name in SPLITS:
        entry = header.get(name)
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
                and 0 <= offsets[0] <= offsets[1] <= len(body) and (offsets[1] - offsets[0]) % 4 == 0
                and entry.get("dtype") == "I32"):
            raise BadInput(f"{path}: the tensor {name!r} is missing, or is not I32 ids within the file "
                           f"({json.dumps(entry)[:120]})")
        ids = array.array("i")
        ids.frombytes(body[offsets[0]:offsets[1]])
        if sys.byteorder == "big":  # the file is little-endian
            ids.byteswap()
        if ids and not 0 <= min(ids) <= max(ids) < vocabulary:
            at = next(i for i, token in enumerate(ids) if not 0 <= token < vocabulary)
            raise BadInput(f"{path}: {name} id {ids[at]} (token {at:,} of {len(ids):,}) is outside the vocabulary "
                           f"of {vocabulary:,} words (ids 0 to {vocabulary - 1:,})")
        splits[name] = ids
    return splits, vocabulary, metadata.get("vocabulary_digest")


def check_windows(path, splits, names, streams, steps):
    """Each split of `names` holds B streams of T + 1 ids at least, one window: Glassbox's rule (data/bptt.cpp)."""
    for name in names:
        needed = streams * (steps + 1)
        if len(splits[name]) < needed:
            raise BadInput(f"{path}: the {name} split's {len(splits[name]):,} tokens are too few for {streams} "
                           f"streams (--batch) and one window of {steps} steps: each stream needs {steps} + 1 "
                           f"tokens (the targets are the next token), {needed:,} in all")


def as_tensors(splits):
    """{split: int64 tensor} of read_corpus's arrays."""
    import torch
    return {name: torch.frombuffer(bytearray(ids.tobytes()), dtype=torch.int32).to(torch.int64) if ids
            else torch.zeros(0, dtype=torch.int64) for name, ids in splits.items()}


def perplexity(mean_loss):
    """exp of the mean loss; inf past a double's range."""
    try:
        return math.exp(mean_loss)
    except OverflowError:
        return math.inf


def batchify(ids, streams):
    """(L, B), time-major: column b is ids[b*L : (b+1)*L]."""
    length = ids.numel() // streams
    return ids[:length * streams].view(streams, length).t().contiguous()


def windows(data, steps):
    for w in range((data.size(0) - 1) // steps):
        yield data[w * steps:(w + 1) * steps], data[w * steps + 1:(w + 1) * steps + 1]


def lr_at(base, schedule, epoch):
    step = parse_schedule(schedule)
    if step is None:
        return base
    every, gamma = step
    return base * gamma ** (epoch // every)


def evaluate(model, data, steps, batch):
    import torch
    model.eval()
    state = model.zero_state(batch, data.device)
    total, count = 0.0, 0
    with torch.no_grad():
        for x, y in windows(data, steps):
            logits, state = model(x, state)
            total += torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1)).item() * y.numel()
            count += y.numel()
    return perplexity(total / count)


def timed_step(mode, model, optimizer, loss, inference_mode):
    """One step of `mode` as peer_protocol.Session.step takes it, so that both PyTorch peers time the same
    work: forward is the loss with autograd on; forward_backward and train_step zero the gradients
    (set_to_none=True: the backward writes them, it does not add to zeros) and run the backward, train_step
    then the optimizer's step; inference is the loss under inference_mode."""
    if mode == "inference":
        with inference_mode():
            loss()
        return
    if mode == "forward":
        loss()
        return
    model.zero_grad(set_to_none=True)
    loss().backward()
    if mode == "train_step":
        optimizer.step()


def time_modes(spec, args):
    """{name: tokens/s} of each mode in args.time, and prints them."""
    import torch
    torch.manual_seed(args.seed)
    model = spec.build()
    optimizer = make_sgd(model.parameters())
    tokens = torch.randint(0, spec.vocabulary, (spec.steps, args.batch))
    labels = (torch.arange(spec.steps * args.batch) % spec.vocabulary).view(spec.steps, args.batch)
    state = model.zero_state(args.batch, "cpu")

    def loss():
        logits, _ = model(tokens, state)
        return torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), labels.reshape(-1))

    rates = {}
    for mode in parse_modes(args.time):
        model.eval() if mode == "inference" else model.train()
        for _ in range(args.warmup):
            timed_step(mode, model, optimizer, loss, torch.inference_mode)
        times = []
        while sum(times) < args.min_time or len(times) < 3:
            start = time.perf_counter()
            timed_step(mode, model, optimizer, loss, torch.inference_mode)
            times.append(time.perf_counter() - start)
        name = f"{spec.name}/{mode}/batch:{args.batch}"
        rates[name] = spec.steps * args.batch * len(times) / sum(times)
        print(f"{name:40s} {1e3 * sum(times) / len(times):10.2f} ms  {rates[name]:10.1f} tokens/s", flush=True)
    return rates


def parse_args(argv=None):
    """The flags, checked, and the output paths, before anything is read or run: a bad one is argparse's
    usage error, exit status 2."""
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="?", help="the file `glassbox corpus SPEC --out FILE` wrote")
    parser.add_argument("--time", metavar="MODES", help="time these modes instead of training (see above)")
    parser.add_argument("--min-time", type=positive_float, default=2.0, help="with --time: seconds timed per mode")
    parser.add_argument("--warmup", type=count, default=10, help="with --time: untimed steps of each mode first")
    parser.add_argument("--net", default="LSTMSmall", help=", ".join(m.name for m in LANGUAGE_MODELS))
    parser.add_argument("--epochs", type=count, default=4)
    parser.add_argument("--batch", type=positive_int, default=20)
    parser.add_argument("--lr", type=positive_float, default=1.0)
    parser.add_argument("--clip", type=float, default=5.0, help="the gradients' largest global norm (0: no clipping)")
    parser.add_argument("--schedule", default="constant", help="constant or step:EPOCHS:GAMMA")
    parser.add_argument("--threads", type=count, default=0, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--seed", type=count, default=1)
    parser.add_argument("--json", help="write the epochs' rows to this file")
    parser.add_argument("--weights", help="score this model file instead of training (strict load)")
    parser.add_argument("--save", help="write the trained model's state_dict here (safetensors)")
    args = parser.parse_args(argv)
    if find_language_model(args.net) is None:
        parser.error(f"unknown network '{args.net}'; valid: {', '.join(m.name for m in LANGUAGE_MODELS)}")
    if not (math.isfinite(args.clip) and args.clip >= 0.0):
        parser.error(f"--clip must be a finite number, 0 (no clipping) or more, got {args.clip}")
    if args.seed >= 2 ** 64:
        parser.error(f"--seed must be below 2^64 (torch.manual_seed), got {args.seed}")
    try:
        parse_schedule(args.schedule)
        if args.time is not None:
            parse_modes(args.time)
            # Timing reads no ids and trains nothing: an ids file, --weights or --save would be ignored.
            given = [flag for flag, value in (("an ids file", args.ids), ("--weights", args.weights),
                                              ("--save", args.save)) if value is not None]
            if given:
                raise BadInput(f"--time times steps on random ids and trains nothing: it takes neither an ids file, "
                               f"--weights nor --save (given: {', '.join(given)})")
        elif args.ids is None:
            raise BadInput("give the ids file (glassbox corpus SPEC --out FILE), or --time MODES")
        if args.weights is not None and (args.save is not None or args.json is not None):
            raise BadInput("--weights scores a model file and trains nothing: --save and --json are for a training run")
        inputs = [path for path in (args.ids, args.weights) if path is not None]
        for flag in ("--json", "--save"):
            if getattr(args, flag[2:]) is not None:
                check_output(getattr(args, flag[2:]), flag, inputs=inputs)
        if args.json is not None and args.save is not None and os.path.abspath(args.json) == os.path.abspath(args.save):
            raise BadInput(f"--json and --save are the same file, {args.json}")
    except BadInput as e:
        parser.error(str(e))
    return args


def json_value(value):
    """A row's value for JSON, which has no NaN or infinity: null for those (as Glassbox's logs write them)."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def main(argv=None):
    args = parse_args(argv)
    spec = find_language_model(args.net)
    if args.weights is not None and not os.path.isfile(args.weights):
        what = "a folder, not a file" if os.path.isdir(args.weights) else "no such file"
        print(f"{PROG}: --weights {args.weights}: {what}", file=sys.stderr)
        return 1
    if args.time is None:  # the ids are read and checked before torch is loaded
        try:
            splits, vocabulary, digest = read_corpus(args.ids)
            if vocabulary != spec.vocabulary:
                raise BadInput(f"{args.net} predicts {spec.vocabulary} words; the vocabulary of {args.ids} has "
                               f"{vocabulary}")
            check_windows(args.ids, splits, ("valid", "test") if args.weights else SPLITS, args.batch, spec.steps)
        except BadInput as e:
            print(f"{PROG}: {e}", file=sys.stderr)
            return 1

    import torch
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.time is not None:
        rates = time_modes(spec, args)
        if args.json:
            rows = [{"name": name, "run_type": "iteration", "tokens/s": rate} for name, rate in rates.items()]
            text = json.dumps({"context": {"torch": torch.__version__, "threads": torch.get_num_threads()},
                               "benchmarks": rows}, indent=1)
            try:
                write_text(args.json, text)
            except BadInput as e:
                print(f"{PROG}: --json: {e}", file=sys.stderr)
                return 1
        return 0
    torch.manual_seed(args.seed)
    data = {name: batchify(ids, args.batch) for name, ids in as_tensors(splits).items()}
    model = spec.build()
    if args.weights:
        return score_weights(model, args, data, spec)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.0, weight_decay=0.0)
    print(f"{args.net} in PyTorch {torch.__version__}, {torch.get_num_threads()} threads: batch {args.batch}, "
          f"{spec.steps} steps, lr {args.lr} ({args.schedule}), clip {args.clip}")
    print("epoch   train ppl   valid ppl    test ppl  time (s)  tokens/s")
    rows = []
    for epoch in range(args.epochs):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(args.lr, args.schedule, epoch)
        model.train()
        state = model.zero_state(args.batch, "cpu")
        start, total, count = time.perf_counter(), 0.0, 0
        for x, y in windows(data["train"], spec.steps):
            state = tuple(s.detach() for s in state)
            logits, state = model(x, state)
            loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1))
            optimizer.zero_grad(set_to_none=False)
            loss.backward()
            if args.clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            total += loss.item() * y.numel()
            count += y.numel()
        seconds = time.perf_counter() - start
        row = {"epoch": epoch + 1, "train_perplexity": perplexity(total / count),
               "valid_perplexity": evaluate(model, data["valid"], spec.steps, args.batch),
               "test_perplexity": evaluate(model, data["test"], spec.steps, args.batch),
               "seconds": seconds, "tokens_per_second": count / seconds}
        rows.append(row)
        print(f"{epoch + 1:>2}/{args.epochs}  {row['train_perplexity']:10.2f}  {row['valid_perplexity']:10.2f}  "
              f"{row['test_perplexity']:10.2f}  {seconds:8.1f}  {row['tokens_per_second']:8.0f}", flush=True)
    try:
        if args.json:
            rows = [{key: json_value(value) for key, value in row.items()} for row in rows]
            write_text(args.json, json.dumps({"net": args.net, "torch": torch.__version__, "args": vars(args),
                                              "epochs": rows}, indent=1))
        if args.save:
            import safetensors.torch
            # "vocabulary": the digest glassbox eval checks the corpus against, as in Glassbox's own checkpoints.
            metadata = {"format": "pt"} if digest is None else {"format": "pt", "vocabulary": digest}
            state = model.state_dict()
            write_whole(args.save, lambda path: safetensors.torch.save_file(state, path, metadata=metadata),
                        named=f"--save {args.save}")
            print(f"wrote {args.save}: test perplexity {evaluate(model, data['test'], spec.steps, args.batch):.4f}")
    except BadInput as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    return 0


def score_weights(model, args, data, spec):
    """--weights: a Glassbox model file in PyTorch's model, strictly, then its perplexities."""
    import safetensors
    import safetensors.torch
    try:
        model.load_state_dict(safetensors.torch.load_file(args.weights), strict=True)
    except (OSError, RuntimeError, ValueError, safetensors.SafetensorError) as e:
        # load_state_dict's message is a heading line, then a line per kind of mismatch.
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        reason = " ".join(lines[1:] if len(lines) > 1 and lines[0].endswith(":") else lines) or type(e).__name__
        print(f"{PROG}: --weights {args.weights}: not a model file of {args.net}: "
              f"{reason if len(reason) <= 300 else reason[:300] + '...'}", file=sys.stderr)
        return 1
    valid = evaluate(model, data["valid"], spec.steps, args.batch)
    test = evaluate(model, data["test"], spec.steps, args.batch)
    print(f"{args.weights} in PyTorch's {args.net} (strict load): valid perplexity {valid:.4f}, test perplexity {test:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
