#!/usr/bin/env python3
"""tests/fuzz/make_safetensors_seeds.py: writes the seeds of fuzz_safetensors
under tests/fuzz/corpus/fuzz_safetensors/: a few small valid safetensors
files and a few broken ones, one per kind of problem the reader names
(tests/test_safetensors_malformed.cpp has them all). The committed seeds are
its output; run it again after editing the list. Python 3 alone (no torch).

    python3 tests/fuzz/make_safetensors_seeds.py
"""

import json
import os
import shutil
import struct

from seed_files import write_seeds

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fuzz_safetensors")
DATA = os.path.join(os.path.dirname(HERE), "data")


def raw(header, data=b"", length=None):
    """8 bytes of length, the header as given (bytes), the data."""
    return struct.pack("<Q", len(header) if length is None else length) + header + data


def file_of(tensors, metadata=None):
    """A valid file, as the Python library writes it: tensors = [(name, dtype, shape, bytes)]."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, values in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(values)]}
        data += values
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return raw(text, data)


W = ("w", "F32", [2], struct.pack("<2f", 1.0, -2.0))
SEEDS = {
    "empty_object": file_of([]),
    "metadata_only": file_of([], {"format": "pt"}),
    "one_f32": file_of([W]),
    "state_dict": file_of([("bn.num_batches_tracked", "I64", [], struct.pack("<q", 7)),
                           ("conv.weight", "F32", [1, 1, 2, 2], struct.pack("<4f", 1, 2, 3, 4)),
                           ("none", "F32", [0, 3], b""), ("half", "F16", [1], b"\x00\x3c"),
                           ("odd", "U8", [3], b"abc")], {"format": "pt", "net": "LeNet"}),
    "short": b"\x10\x00\x00",
    "length_past_end": raw(b"{}", length=64),
    "length_huge": raw(b"{}", length=2 ** 63),
    "not_json": raw(b'{"w": x}'),
    "nul_padding": raw(b"{}\0\0\0\0\0\0"),
    "array": raw(b"[1,2]"),
    "duplicate_key": raw(b'{"w":{},"w":{}}'),
    "deep": raw(b'{"w":{"shape":[[[1]]]}}'),
    "unknown_dtype": raw(b'{"w":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}}', b"abcd"),
    "sub_byte": raw(b'{"w":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}', b"a"),
    "negative_size": raw(b'{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}', b"abcd"),
    "wrong_size": raw(b'{"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}}', b"x" * 20),
    "gap": raw(b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
               b'"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}}', b"abcdef"),
    "overlap": raw(b'{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},'
                   b'"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}', b"abcdef"),
    "trailing": file_of([W]) + b"xyz",
    "truncated": file_of([W])[:-3],
    "metadata_number": raw(b'{"__metadata__":{"epoch":3}}'),
    "huge_shape": raw(b'{"w":{"dtype":"F32","shape":[18446744073709551615,0],"data_offsets":[0,0]}}'),
    # Many entries (the reader is linear in them), every fourth of no bytes:
    # as many as fit in the fuzzer's 4 KB inputs.
    "many_entries": file_of([(f"t{i}", "U8", [0] if i % 4 == 0 else [1], b"" if i % 4 == 0 else bytes([i]))
                             for i in range(60)]),
}


def main():
    write_seeds(OUT, SEEDS)
    # Files written by Python's safetensors package (tests/data/make_*.py).
    for name in ("python.safetensors", "torch_tiny.safetensors", "torch_tiny_io.safetensors"):
        shutil.copy(os.path.join(DATA, name), os.path.join(OUT, name.replace(".safetensors", "")))
    print(f"{len(os.listdir(OUT))} seeds in {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
