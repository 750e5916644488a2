#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_safetensors (tests/fuzz_corpus_safetensors/)
with Python's own json and struct modules, independently of libdispatch's
writer: valid files of every loadable dtype, metadata, 0-dim and empty
tensors, a tensor at a misaligned offset, and a few malformed ones.
    python3 tests/gen_safetensors_corpus.py [DIR]
"""
import json
import os
import struct
import sys

SIZES = {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "F16": 2, "BF16": 2, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def build(tensors, metadata=None, pad=True, order=None):
    """tensors: [(name, dtype, shape)], laid out in this order."""
    header, data, off = {}, b"", 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for i, (name, dtype, shape) in enumerate(tensors):
        n = numel(shape) * SIZES[dtype]
        body = bytes((i * 31 + k * 7 + 1) % (2 if dtype == "BOOL" else 256) for k in range(n))
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + n]}
        data += body
        off += n
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "fuzz_corpus_safetensors")
    os.makedirs(out, exist_ok=True)
    files = {
        "empty.safetensors": build([]),
        "metadata_only.safetensors": build([], {"framework": "pt", "step": "1000"}),
        "attn.safetensors": build([("attn.0", "F32", [1, 2, 3])]),
        "every_dtype.safetensors": build([(d.lower(), d, [2, 3]) for d in SIZES], {"format": "pt"}),
        "scalar_and_empty.safetensors": build([("s", "F64", []), ("e", "F32", [0, 4]), ("b", "BOOL", [3])]),
        "misaligned.safetensors": build([("a", "U8", [1]), ("b", "F32", [1]), ("c", "U8", [3]), ("d", "I64", [2])],
                                        pad=False),
        "not_json.safetensors": struct.pack("<Q", 8) + b'{"a":1  ',
        "trailing.safetensors": build([("a", "I16", [2])]) + b"\x00\x00",
    }
    for name, blob in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main()
