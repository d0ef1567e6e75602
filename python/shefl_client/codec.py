"""The sparse-delta wire format, version 1, byte for byte as the C++ codec
(common/sparse/codec.h) writes and reads it.

Layout (little-endian): 0xD1, value type (0 fp32, 1 fp16, 2 bf16), index
format (0 varint gaps, 1 bitmap, 2 Golomb-Rice, 3 Elias-Fano, 4 dense),
d and k as unsigned LEB128, the index section, then k values in index
order. The encoder takes the smallest index section; on a tie the first of
varint, bitmap, Elias-Fano, Golomb-Rice, dense. The decoder accepts each
form only in its canonical bytes and refuses everything else with the C++
decoder's own message (CodecError).

numpy does the per-element work; the only Python loops are over bytes of
one varint or over formats. tests/data/codec_vectors.json holds what the
C++ codec does; python/tests/test_codec.py holds this module to it.
This module encodes; codec_layout.py holds the constants and sizes,
codec_decode.py the decoder. Pure functions; thread-safe.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import numpy.typing as npt

from .codec_decode import decode
from .codec_layout import (FORMAT_NAMES, FORMATS, MAGIC_VERSION, MAX_DIM, PREFERENCE,
                           VALUE_TYPE_NAMES, VALUE_TYPES, Array, CodecError, elias_fano_bits,
                           gaps, index_code_parameter, index_section_sizes, plan_format,
                           value_bytes, varint_length, varint_lengths)

__all__ = ["FORMAT_NAMES", "FORMATS", "MAGIC_VERSION", "MAX_DIM", "PREFERENCE",
           "VALUE_TYPE_NAMES", "VALUE_TYPES", "CodecError", "decode", "elias_fano_bits",
           "encode", "index_code_parameter", "index_section_sizes", "plan_format",
           "value_bytes", "varint_length"]


def _put_varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _encode_varints(values: Array) -> bytes:
    """LEB128 of every element of a uint64 array, concatenated (vectorised)."""
    if values.size == 0:
        return b""
    v = values.astype(np.uint64)
    lengths = varint_lengths(v)
    groups = np.stack([(v >> np.uint64(7 * j)) & np.uint64(0x7F) for j in range(6)], axis=1)
    cont = np.arange(6)[None, :] < (lengths[:, None] - 1)
    keep = np.arange(6)[None, :] < lengths[:, None]
    data = (groups | (cont.astype(np.uint64) << np.uint64(7)))[keep]
    return bytes(data.astype(np.uint8).tobytes())


def _pack_bits(ones: Array, nbits: int) -> bytes:
    """A bit stream of nbits bits with ones at the given positions, LSB
    first in each byte, zero-padded to a byte."""
    bits = np.zeros(((nbits + 7) // 8) * 8, dtype=np.uint8)
    bits[ones] = 1
    return np.packbits(bits, bitorder="little").tobytes()


def _write_golomb_rice(d: int, indices: Array) -> bytes:
    k = int(indices.size)
    if k == 0:
        return b""
    b = index_code_parameter(d, k)
    gap = gaps(indices)
    q = gap >> b
    lens = q + 1 + b
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    ones = [starts + q]  # the unary terminator
    for j in range(b):  # the low b bits of each gap, least significant first
        bit = ((gap >> j) & 1).astype(bool)
        ones.append((starts + q + 1 + j)[bit])
    return _pack_bits(np.concatenate(ones), int(np.sum(lens)))


def _write_elias_fano(d: int, indices: Array) -> bytes:
    k = int(indices.size)
    if k == 0:
        return b""
    b = index_code_parameter(d, k)
    x = indices.astype(np.int64) - np.arange(k)
    ones = []
    for j in range(b):  # low parts: b bits per entry, entry after entry
        bit = ((x >> j) & 1).astype(bool)
        ones.append((np.arange(k) * b + j)[bit])
    ones.append(k * b + (x >> b) + np.arange(k))  # upper part, unary
    return _pack_bits(np.concatenate(ones), elias_fano_bits(d, k))


def _write_indices(d: int, indices: Array, fmt: str) -> bytes:
    if fmt == "varint":
        return _encode_varints(gaps(indices))
    if fmt == "bitmap":
        bits = np.zeros(((d + 7) // 8) * 8, dtype=np.uint8)
        bits[indices.astype(np.int64)] = 1
        return np.packbits(bits, bitorder="little").tobytes()
    if fmt == "golomb-rice":
        return _write_golomb_rice(d, indices)
    if fmt == "elias-fano":
        return _write_elias_fano(d, indices)
    return b""  # dense


def _fmt_float(x: float) -> str:
    """A float as absl::StrCat prints it (%g, six significant digits)."""
    return "%g" % float(x)


def _narrow(values: npt.NDArray[np.float32], value_type: str) -> tuple[Array, Optional[int]]:
    """fp32 values as the wire's uint16 (fp16, bf16) or uint32 bits, round
    to nearest even; (bits, position of the first value that does not fit
    or None)."""
    u = values.view(np.uint32)
    nonfinite = (u & 0x7F800000) == 0x7F800000
    if value_type == "fp32":
        return u, (int(np.argmax(nonfinite)) if nonfinite.any() else None)
    if value_type == "fp16":
        with np.errstate(over="ignore"):
            h = values.astype(np.float16)
        bad = nonfinite | ~np.isfinite(h)
        return h.view(np.uint16), (int(np.argmax(bad)) if bad.any() else None)
    rounded = (u.astype(np.uint64) + 0x7FFF + ((u >> 16) & 1)) >> 16
    b = (rounded & 0xFFFF).astype(np.uint16)
    bad = nonfinite | ((b & 0x7F80) == 0x7F80)
    return b, (int(np.argmax(bad)) if bad.any() else None)


def _validate(d: int, indices: Array, values: Array) -> None:
    if indices.size != values.size:
        raise CodecError("sparse delta has %d indices but %d values" % (indices.size, values.size))
    if d > MAX_DIM:
        raise CodecError("dim %d exceeds the uint32 index range" % d)
    idx = indices.astype(np.int64)
    out = np.nonzero(idx >= d)[0]
    down = np.nonzero(idx[1:] <= idx[:-1])[0] + 1 if idx.size > 1 else np.array([], dtype=np.int64)
    if out.size and (not down.size or out[0] < down[0]):
        i = int(out[0])
        raise CodecError("index %d at position %d out of range [0, %d)" % (idx[i], i, d))
    if down.size:
        i = int(down[0])
        raise CodecError("indices not strictly ascending at position %d: %d after %d (%s)" % (
            i, idx[i], idx[i - 1], "duplicate" if idx[i] == idx[i - 1] else "descending"))


def encode(d: int, indices: npt.ArrayLike, values: npt.ArrayLike, value_type: str = "fp32",
           fmt: Optional[str] = None) -> bytes:
    """The bytes of a sparse delta: indices ascending and unique in [0, d),
    values float32 in index order. fmt: one of FORMATS to force a form;
    None takes the smallest, as the C++ encoder does."""
    idx = np.asarray(indices, dtype=np.uint32)
    vals = np.ascontiguousarray(values, dtype=np.float32)
    _validate(d, idx, vals)
    k = int(idx.size)
    if fmt is None:
        fmt = plan_format(d, idx)
    elif fmt not in FORMATS:
        raise CodecError("unknown index format %r" % (fmt,))
    elif fmt == "dense" and k != d:
        raise CodecError("dense index format needs k == d (k=%d, d=%d)" % (k, d))
    bits, bad = _narrow(vals, value_type)
    if bad is not None:
        v = vals[bad]
        why = "is NaN" if np.isnan(v) else "is Inf" if np.isinf(v) else \
            "%s overflows %s" % (_fmt_float(v), value_type)
        raise CodecError("value at position %d (index %d) %s" % (bad, idx[bad], why))
    header = bytes([MAGIC_VERSION, VALUE_TYPES[value_type], FORMATS[fmt]])
    return (header + _put_varint(d) + _put_varint(k) + _write_indices(d, idx, fmt)
            + bits.astype("<u%d" % value_bytes(value_type)).tobytes())


