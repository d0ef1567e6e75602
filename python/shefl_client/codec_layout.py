"""The sparse-delta wire format's constants and sizes (common/sparse/codec.h):
what the encoder (codec.py) and the decoder (codec_decode.py) share, and
which index form the encoder picks. Pure functions; thread-safe."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]  # numpy arrays of indices (any unsigned or signed int dtype)

MAGIC_VERSION = 0xD1
MAX_DIM = 1 << 32
VALUE_TYPES = {"fp32": 0, "fp16": 1, "bf16": 2}
VALUE_TYPE_NAMES = {v: k for k, v in VALUE_TYPES.items()}
FORMATS = {"varint": 0, "bitmap": 1, "golomb-rice": 2, "elias-fano": 3, "dense": 4}
FORMAT_NAMES = {v: k for k, v in FORMATS.items()}
# Tie order: the first of equal index-section sizes wins.
PREFERENCE = ["varint", "bitmap", "elias-fano", "golomb-rice", "dense"]


class CodecError(ValueError):
    """Bad input, with the message the C++ codec gives for it."""


def value_bytes(value_type: str) -> int:
    return 4 if value_type == "fp32" else 2


# ----------------------------------------------------------------- sizes

def varint_length(v: int) -> int:
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def varint_lengths(values: Array) -> Array:
    """Bytes of each LEB128 varint of a uint64 array."""
    v = values.astype(np.uint64)
    return (1 + (v >= 1 << 7).astype(np.int64) + (v >= 1 << 14) + (v >= 1 << 21)
            + (v >= 1 << 28) + (v >= 1 << 35))


def index_code_parameter(d: int, k: int) -> int:
    """b minimising k(b+1) + ((d-k) >> b), smallest on a tie; 0 for k = 0."""
    if k == 0:
        return 0
    best, best_bits = 0, k + (d - k)
    for b in range(1, 32):
        bits = k * (b + 1) + ((d - k) >> b)
        if bits < best_bits:
            best, best_bits = b, bits
    return best


def elias_fano_bits(d: int, k: int) -> int:
    if k == 0:
        return 0
    b = index_code_parameter(d, k)
    return k * (b + 1) + ((d - k) >> b)


def gaps(indices: Array) -> npt.NDArray[np.int64]:
    """The zero-runs before each index (ascending indices)."""
    idx = indices.astype(np.int64)
    prev = np.concatenate((np.array([-1], dtype=np.int64), idx[:-1])) if idx.size else idx
    out: npt.NDArray[np.int64] = idx - prev - 1
    return out


def index_section_sizes(d: int, indices: Array) -> dict[str, Optional[int]]:
    """Bytes of each form's index section (None where it does not apply)."""
    k = int(indices.size)
    gap = gaps(indices)
    b = index_code_parameter(d, k)
    rice_bits = k * (b + 1) + int(np.sum(gap >> b)) if k else 0
    return {
        "varint": int(np.sum(varint_lengths(gap))) if k else 0,
        "bitmap": (d + 7) // 8,
        "golomb-rice": (rice_bits + 7) // 8,
        "elias-fano": (elias_fano_bits(d, k) + 7) // 8,
        "dense": 0 if k == d else None,
    }


def plan_format(d: int, indices: Array) -> str:
    sizes = index_section_sizes(d, indices)
    # The smallest; on a tie the first in PREFERENCE (bitmap always applies).
    return min((size, rank, f) for rank, f in enumerate(PREFERENCE)
               if (size := sizes[f]) is not None)[2]


