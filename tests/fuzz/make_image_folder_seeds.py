#!/usr/bin/env python3
"""tests/fuzz/make_image_folder_seeds.py: writes the seeds of fuzz_image_folder
under tests/fuzz/corpus/fuzz_image_folder/: small folders of the JPEG seeds
of fuzz_jpeg (tests/fuzz/corpus/fuzz_jpeg/, tiny valid and broken files),
valid ones and ones with a corrupt, an empty or an ignored file among them.
The committed seeds are its output; run it again after editing the list
(after make_seeds.sh, which writes the JPEG seeds). Python 3 alone.

    python3 tests/fuzz/make_image_folder_seeds.py

A seed is the target's input (tests/fuzz/fuzz_image_folder.cpp): a flags
byte, then per file a byte of class and name, a 2-byte little-endian length
and the file's bytes.
"""

import os
import struct

from seed_files import report, write_seeds

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fuzz_image_folder")
JPEGS = os.path.join(HERE, "corpus", "fuzz_jpeg")

# The flags byte.
STOP, RGB, TRAINING, SHUFFLE = 4, 8, 16, 32
# A file's name, after its class in the file's first byte.
JPG, UPPER_JPEG, JPEG, TXT = 0 << 2, 1 << 2, 2 << 2, 3 << 2


def jpeg(name):
    with open(os.path.join(JPEGS, name), "rb") as f:
        return f.read()


def folder(classes, flags, files):
    """files = [(class, name kind, bytes)]."""
    out = bytes([(classes - 1) | flags])
    for label, kind, contents in files:
        out += bytes([label | kind]) + struct.pack("<H", len(contents)) + contents
    return out


def seeds():
    grey, rgb, wide, tall = jpeg("grey_8x8.jpg"), jpeg("rgb_12x12.jpg"), jpeg("rgb_24x16.jpg"), jpeg("rgb_9x40.jpg")
    cut, png = jpeg("cut_short.jpg"), jpeg("png_header.jpg")
    return {
        "two_classes": folder(2, 0, [(0, JPG, grey), (1, JPG, rgb)]),
        "two_classes_rgb_training": folder(2, RGB | TRAINING | SHUFFLE,
                                           [(0, JPG, grey), (1, JPG, rgb), (1, UPPER_JPEG, wide)]),
        "three_classes": folder(3, RGB, [(2, JPEG, tall), (0, JPG, rgb), (1, JPG, grey), (0, JPG, wide)]),
        "corrupt_among_valid": folder(2, 0, [(0, JPG, grey), (0, JPG, cut), (1, JPG, rgb), (1, JPG, png)]),
        "corrupt_among_valid_stop": folder(2, STOP | RGB,
                                           [(0, JPG, grey), (0, JPG, rgb), (1, JPG, png), (1, JPG, wide)]),
        "empty_file": folder(2, TRAINING, [(0, JPG, grey), (1, JPG, b""), (1, JPG, rgb)]),
        "empty_file_stop": folder(2, STOP, [(0, JPG, b""), (1, JPG, rgb)]),
        "all_unreadable": folder(2, SHUFFLE, [(0, JPG, png), (1, JPEG, b"")]),
        "ignored_file": folder(2, 0, [(0, JPG, grey), (0, TXT, b"not an image"), (1, JPG, rgb)]),
        "class_without_images": folder(3, 0, [(0, JPG, grey), (1, JPG, rgb), (2, TXT, grey)]),
        "cut_after_a_length": folder(1, 0, [(0, JPG, grey)])[:200],
    }


def main():
    write_seeds(OUT, seeds())
    report(OUT)


if __name__ == "__main__":
    main()
