#!/usr/bin/env python3
"""tests/fuzz/make_text_corpus_seeds.py: writes the seeds of fuzz_text_corpus
under tests/fuzz/corpus/fuzz_text_corpus/: small corpora, one file or a
directory, in fortune's "%" format and one entry per line, with overstrikes,
capitals, UTF-8 and apostrophes, and the ones TextCorpus must refuse (a NUL
byte, no tokens, a directory without a text file). The committed seeds are
its output; run it again after editing the list. Python 3 alone.

    python3 tests/fuzz/make_text_corpus_seeds.py

A seed is the target's input (tests/fuzz/fuzz_text_corpus.cpp): a flags byte
(vocabulary, file or directory, trailing '/'), a BPTT byte (streams, steps),
then the file's bytes, or per directory entry a kind byte, a 2-byte
little-endian length and the bytes.
"""

import os
import struct

from seed_files import report, write_seeds

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fuzz_text_corpus")

# The flags byte, after the vocabulary V - 3 in bits 0-3.
DIRECTORY, SLASH = 16, 32
# A directory entry's kind.
TEXT, DOTTED, LINK, FOLDER = 0, 2, 3, 4


def bptt(streams, steps):
    return bytes([(streams - 1) | (steps - 1) << 3])


def one_file(vocabulary, streams, steps, text):
    return bytes([vocabulary - 3]) + bptt(streams, steps) + text


def directory(vocabulary, streams, steps, entries, flags=0):
    """entries = [(kind, bytes)]."""
    out = bytes([(vocabulary - 3) | DIRECTORY | flags]) + bptt(streams, steps)
    for kind, contents in entries:
        out += bytes([kind]) + struct.pack("<H", len(contents)) + contents
    return out


FORTUNES = (b"A day without sunshine is like, you know, night.\n%\n"
            b"Don't panic -- it's only the _\bi_\bn_\bs_\bi_\bd_\be of the box!!\n"
            b"%\n%\nO'Clock... caf\xc3\xa9 CAF\xc3\x89 <eos> <unk>\n%\n")
LINES = b"".join(b"line %d of twenty says %s\n" % (i, b"the word" * (i % 3)) for i in range(20))

SEEDS = {
    "fortune_file": one_file(8, 2, 3, FORTUNES),
    "lines_file": one_file(12, 1, 1, LINES),
    "lines_file_large_vocabulary": one_file(18, 8, 8, LINES + LINES),
    "control_bytes": one_file(5, 3, 2, b"tab\there\r\nbell\x07 del\x7f \b\bback\n   \n%  \t\nafter"),
    "utf8_overstrike": one_file(6, 2, 1, b"na\xc3\xaf\bive caf\xc3\xa9\be \xe2\x82\xac\b$ \xc3\b\xa9\n"),
    "nul_byte": one_file(6, 1, 1, b"a text\nwith a \x00 in it\n"),
    "only_separators": one_file(6, 1, 1, b"%\n%  \n\n   \n%"),
    "empty_file": one_file(3, 1, 1, b""),
    "directory_mixed": directory(9, 2, 2, [(TEXT, FORTUNES), (DOTTED, b"not read\n"), (LINK, b""),
                                           (FOLDER, b"not read either\n"), (TEXT, LINES)], SLASH),
    "directory_no_text": directory(4, 1, 1, [(DOTTED, b"dotted\n"), (LINK, b""), (FOLDER, b"inside\n")]),
    "directory_nul_in_second": directory(7, 1, 2, [(TEXT, LINES), (TEXT, b"ok\n\x00\n")]),
    "directory_empty_texts": directory(5, 1, 1, [(TEXT, b"%\n"), (TEXT, b"  \n")]),
    "cut_after_a_length": directory(6, 2, 2, [(TEXT, LINES)])[:40],
}


def main():
    write_seeds(OUT, SEEDS)
    report(OUT)


if __name__ == "__main__":
    main()
