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
Prints one row per epoch; --json FILE writes them.

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
(bench/peers/pytorch_nets.py's protocol): forward (training mode, with the
loss), forward_backward, train_step (SGD lr 1e-4, momentum 0.9, weight decay
5e-4: Glassbox's kBenchmarkSgd) and inference (eval, inference_mode, with
the loss, as Glassbox's inference graph: peer_protocol.py), on random token ids from a fixed seed and labels n % V, 10 warm-up
steps (--warmup N: N), then timed steps for --min-time seconds (at least 3); --json writes
Google-Benchmark-shaped rows with tokens/s, which bench/interleave.py reads:

    python3 bench/peers/lstm_lm.py --time forward_backward --net LSTM --threads 2
"""

import argparse
import json
import math
import os
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from peer_language_models import LANGUAGE_MODELS, find_language_model  # noqa: E402


def read_ids(path):
    """{split: int64 tensor of ids}, the vocabulary size and its digest (None in an older file) from
    `glassbox corpus --out`."""
    import torch
    with open(path, "rb") as f:
        data = f.read()
    (header_length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_length])
    body = data[8 + header_length:]
    metadata = header.pop("__metadata__", {})
    if metadata.get("format") != "glassbox.corpus v1":
        sys.exit(f"lstm_lm.py: {path} is not what `glassbox corpus --out` writes")
    splits = {}
    for name in ("train", "valid", "test"):
        entry = header[name]
        begin, end = entry["data_offsets"]
        splits[name] = torch.frombuffer(bytearray(body[begin:end]), dtype=torch.int32).to(torch.int64)
    vocabulary = len(metadata["vocabulary"].splitlines())
    return splits, vocabulary, metadata.get("vocabulary_digest")


def batchify(ids, streams):
    """(L, B), time-major: column b is ids[b*L : (b+1)*L]."""
    length = ids.numel() // streams
    return ids[:length * streams].view(streams, length).t().contiguous()


def windows(data, steps):
    for w in range((data.size(0) - 1) // steps):
        yield data[w * steps:(w + 1) * steps], data[w * steps + 1:(w + 1) * steps + 1]


def lr_at(base, schedule, epoch):
    if schedule == "constant":
        return base
    _, every, gamma = schedule.split(":")
    return base * float(gamma) ** (epoch // int(every))


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
    return math.exp(total / count)


def time_modes(spec, args):
    """{name: tokens/s} of each mode in args.time, and prints them."""
    import torch
    torch.manual_seed(args.seed)
    model = spec.build()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9, weight_decay=5e-4)
    tokens = torch.randint(0, spec.vocabulary, (spec.steps, args.batch))
    labels = (torch.arange(spec.steps * args.batch) % spec.vocabulary).view(spec.steps, args.batch)
    state = model.zero_state(args.batch, "cpu")

    def loss():
        logits, _ = model(tokens, state)
        return torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), labels.reshape(-1))

    def step(mode):
        if mode == "inference":
            with torch.inference_mode():
                loss()
            return
        if mode == "train_step":
            optimizer.zero_grad(set_to_none=False)
        value = loss()
        if mode != "forward":
            value.backward()
        if mode == "train_step":
            optimizer.step()

    rates = {}
    for mode in args.time.split(","):
        model.eval() if mode == "inference" else model.train()
        if mode == "forward_backward":
            optimizer.zero_grad(set_to_none=False)
        for _ in range(args.warmup):
            step(mode)
        times = []
        while sum(times) < args.min_time or len(times) < 3:
            start = time.perf_counter()
            step(mode)
            times.append(time.perf_counter() - start)
        name = f"{spec.name}/{mode}/batch:{args.batch}"
        rates[name] = spec.steps * args.batch * len(times) / sum(times)
        print(f"{name:40s} {1e3 * sum(times) / len(times):10.2f} ms  {rates[name]:10.1f} tokens/s", flush=True)
    return rates


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="?", help="the file `glassbox corpus SPEC --out FILE` wrote")
    parser.add_argument("--time", metavar="MODES", help="time these modes instead of training (see above)")
    parser.add_argument("--min-time", type=float, default=2.0, help="with --time: seconds timed per mode")
    parser.add_argument("--warmup", type=int, default=10, help="with --time: untimed steps of each mode first")
    parser.add_argument("--net", default="LSTMSmall", help=", ".join(m.name for m in LANGUAGE_MODELS))
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--clip", type=float, default=5.0)
    parser.add_argument("--schedule", default="constant", help="constant or step:EPOCHS:GAMMA")
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write the epochs' rows to this file")
    parser.add_argument("--weights", help="score this model file instead of training (strict load)")
    parser.add_argument("--save", help="write the trained model's state_dict here (safetensors)")
    args = parser.parse_args()
    if args.warmup < 0:
        sys.exit(f"lstm_lm.py: --warmup must be 0 or more, got {args.warmup}")
    spec = find_language_model(args.net)
    if spec is None:
        sys.exit(f"lstm_lm.py: unknown network '{args.net}'; valid: {', '.join(m.name for m in LANGUAGE_MODELS)}")

    import torch
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.time:
        rates = time_modes(spec, args)
        if args.json:
            rows = [{"name": name, "run_type": "iteration", "tokens/s": rate} for name, rate in rates.items()]
            with open(args.json, "w") as f:
                json.dump({"context": {"torch": torch.__version__, "threads": torch.get_num_threads()},
                           "benchmarks": rows}, f, indent=1)
        return 0
    if args.ids is None:
        parser.error("give the ids file (glassbox corpus SPEC --out FILE), or --time MODES")
    torch.manual_seed(args.seed)
    splits, vocabulary, digest = read_ids(args.ids)
    if vocabulary != spec.vocabulary:
        sys.exit(f"lstm_lm.py: {args.net} predicts {spec.vocabulary} words; the file's vocabulary has {vocabulary}")
    data = {name: batchify(ids, args.batch) for name, ids in splits.items()}
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
        row = {"epoch": epoch + 1, "train_perplexity": math.exp(total / count),
               "valid_perplexity": evaluate(model, data["valid"], spec.steps, args.batch),
               "test_perplexity": evaluate(model, data["test"], spec.steps, args.batch),
               "seconds": seconds, "tokens_per_second": count / seconds}
        rows.append(row)
        print(f"{epoch + 1:>2}/{args.epochs}  {row['train_perplexity']:10.2f}  {row['valid_perplexity']:10.2f}  "
              f"{row['test_perplexity']:10.2f}  {seconds:8.1f}  {row['tokens_per_second']:8.0f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"net": args.net, "torch": torch.__version__, "args": vars(args), "epochs": rows}, f, indent=1)
    if args.save:
        import safetensors.torch
        # "vocabulary": the digest glassbox eval checks the corpus against, as in Glassbox's own checkpoints.
        metadata = {"format": "pt"} if digest is None else {"format": "pt", "vocabulary": digest}
        safetensors.torch.save_file(model.state_dict(), args.save, metadata=metadata)
        print(f"wrote {args.save}: test perplexity {evaluate(model, data['test'], spec.steps, args.batch):.4f}")
    return 0


def score_weights(model, args, data, spec):
    """--weights: a Glassbox model file in PyTorch's model, strictly, then its perplexities."""
    import safetensors.torch
    model.load_state_dict(safetensors.torch.load_file(args.weights), strict=True)
    valid = evaluate(model, data["valid"], spec.steps, args.batch)
    test = evaluate(model, data["test"], spec.steps, args.batch)
    print(f"{args.weights} in PyTorch's {args.net} (strict load): valid perplexity {valid:.4f}, test perplexity {test:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
