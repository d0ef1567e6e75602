"""Decoding the sparse-delta wire format (codec.py has the layout): untrusted
bytes to (indices, values), each form accepted only in its canonical
bytes, everything else refused with the C++ decoder's own message
(common/sparse/codec_decode.cc). Pure functions; thread-safe."""
from __future__ import annotations

from typing import Optional

import numpy as np
import numpy.typing as npt

from .codec_layout import (FORMAT_NAMES, FORMATS, MAGIC_VERSION, MAX_DIM, VALUE_TYPE_NAMES,
                           CodecError, elias_fano_bits, index_code_parameter, value_bytes)

Indices = npt.NDArray[np.int64]
Bits = npt.NDArray[np.uint8]


def _invalid(msg: str) -> CodecError:
    return CodecError("sparse delta: " + msg)


def _get_varint(buf: bytes, pos: int, max_bytes: int, max_value: int,
                where: str) -> tuple[int, int]:
    """(value, next position) of the canonical varint at pos, else the C++
    decoder's error for `where`."""
    v = 0
    for i in range(max_bytes):
        if pos >= len(buf):
            raise _invalid("truncated " + where)
        byte = buf[pos]
        pos += 1
        group = byte & 0x7F
        if i == 9 and group > 1:
            raise _invalid("varint overflow in " + where)
        v |= group << (7 * i)
        if not byte & 0x80:
            if i > 0 and group == 0:
                raise _invalid("non-canonical (overlong) varint in " + where)
            if v > max_value:
                raise _invalid("varint overflow in " + where)
            return v, pos
    raise _invalid("varint overflow in " + where)


def _read_header(buf: bytes, expected_dim: int,
                 max_k: int) -> tuple[str, str, int, int, int]:
    if len(buf) < 3:
        raise _invalid("truncated header (%d bytes)" % len(buf))
    magic, vt, fmt = buf[0], buf[1], buf[2]
    if magic >> 4 != MAGIC_VERSION >> 4:
        raise _invalid("bad magic byte 0x%02x (expected 0x%02x)" % (magic, MAGIC_VERSION))
    if magic & 0xF != MAGIC_VERSION & 0xF:
        raise _invalid("unsupported version %d (expected %d)" % (magic & 0xF, MAGIC_VERSION & 0xF))
    if vt > 2:
        raise _invalid("unknown value type %d" % vt)
    if fmt >= len(FORMATS):
        raise _invalid("unknown index format %d (this decoder knows 0-4: varint, bitmap, "
                       "golomb-rice, elias-fano, dense)" % fmt)
    d, pos = _get_varint(buf, 3, 10, MAX_DIM, "header (d)")
    if d != expected_dim:
        raise _invalid("dimension mismatch: d=%d, expected %d" % (d, expected_dim))
    k, pos = _get_varint(buf, pos, 10, (1 << 64) - 1, "header (k)")
    if k > d:
        raise _invalid("k=%d exceeds d=%d" % (k, d))
    if k > max_k:
        raise _invalid("k=%d above max_k=%d" % (k, max_k))
    return VALUE_TYPE_NAMES[vt], FORMAT_NAMES[fmt], d, k, pos


def _read_varint_gaps(buf: bytes, pos: int, d: int, k: int) -> tuple[Indices, int]:
    if len(buf) - pos < k:
        raise _invalid("truncated index section (%d bytes for %d varint gaps)" % (len(buf) - pos, k))
    out = np.empty(k, dtype=np.int64)
    nxt = 0
    for i in range(k):
        byte = buf[pos] if pos < len(buf) else 0x80
        if pos < len(buf) and byte < 0x80:
            gap, pos = byte, pos + 1
        else:
            gap, pos = _get_varint(buf, pos, 5, 0xFFFFFFFF, "index section at position %d" % i)
        idx = nxt + gap
        if idx >= d:
            raise _invalid("index %d at position %d out of range [0, %d)" % (idx, i, d))
        out[i] = idx
        nxt = idx + 1
    return out, pos


def _read_bitmap(buf: bytes, pos: int, d: int, k: int) -> tuple[Indices, int]:
    nbytes = (d + 7) // 8
    if len(buf) - pos < nbytes:
        raise _invalid("truncated index section (bitmap needs %d bytes, %d left)" % (nbytes, len(buf) - pos))
    bm = np.frombuffer(buf, dtype=np.uint8, count=nbytes, offset=pos)
    if d % 8 and bm[-1] >> (d % 8):
        bit = int(bm[-1]).bit_length() - 1
        raise _invalid("bitmap index %d out of range [0, %d)" % ((nbytes - 1) * 8 + bit, d))
    bits = np.unpackbits(bm, bitorder="little")
    count = int(bits.sum())
    if count != k:
        raise _invalid("count mismatch: bitmap has %d bits set, header k=%d" % (count, k))
    return np.nonzero(bits)[0].astype(np.int64), pos + nbytes


def _bits_of(buf: bytes, pos: int, end: int) -> Bits:
    return np.unpackbits(np.frombuffer(buf, dtype=np.uint8, count=end - pos, offset=pos),
                         bitorder="little")


def _first_set(bits: Bits, start: int) -> Optional[int]:
    rest = np.nonzero(bits[start:])[0]
    return None if rest.size == 0 else start + int(rest[0])


def _read_golomb_rice(buf: bytes, pos: int, d: int, k: int) -> tuple[Indices, int]:
    b = index_code_parameter(d, k)
    left = len(buf) - pos
    if k * (b + 1) > left * 8:
        raise _invalid("truncated index section (Golomb-Rice needs at least %d bytes for k=%d, %d left)"
                       % ((k * (b + 1) + 7) // 8, k, left))
    bits = _bits_of(buf, pos, len(buf))
    ones = np.nonzero(bits)[0]
    out = np.empty(k, dtype=np.int64)
    max_q = d >> b
    at, nxt, o = 0, 0, 0  # bit position, next index, cursor into ones
    for i in range(k):
        o = int(np.searchsorted(ones, at, side="left"))
        if o >= ones.size:
            raise _invalid("truncated index section (Golomb-Rice gap at position %d)" % i)
        q = int(ones[o]) - at
        if q > max_q:
            raise _invalid("index at position %d out of range [0, %d) (Golomb-Rice quotient above %d)"
                           % (i, d, max_q))
        rem_at = at + q + 1
        if rem_at + b > bits.size:
            raise _invalid("truncated index section (Golomb-Rice gap at position %d)" % i)
        rem = int(np.dot(bits[rem_at:rem_at + b].astype(np.int64), 1 << np.arange(b))) if b else 0
        at = rem_at + b
        idx = nxt + (q << b) + rem
        if idx >= d:
            raise _invalid("index %d at position %d out of range [0, %d)" % (idx, i, d))
        out[i] = idx
        nxt = idx + 1
    section = (at + 7) // 8
    stray = _first_set(bits[:section * 8], at)
    if stray is not None:
        raise _invalid("non-zero padding after the Golomb-Rice index section: bit %d of the "
                       "index section is set" % stray)
    return out, pos + section


def _read_elias_fano(buf: bytes, pos: int, d: int, k: int) -> tuple[Indices, int]:
    section = (elias_fano_bits(d, k) + 7) // 8
    left = len(buf) - pos
    if section > left:
        raise _invalid("truncated index section (Elias-Fano needs %d bytes for k=%d, %d left)"
                       % (section, k, left))
    if k == 0:
        return np.empty(0, dtype=np.int64), pos
    b = index_code_parameter(d, k)
    bits = _bits_of(buf, pos, pos + section)
    upper, upper_end = k * b, k * b + k + ((d - k) >> b)
    ones = np.nonzero(bits[upper:upper_end])[0]
    if ones.size < k:
        raise _invalid("Elias-Fano upper bits hold %d ones, header k=%d" % (ones.size, k))
    high = ones[:k] - np.arange(k)
    low = bits[:k * b].reshape(k, b).astype(np.int64) @ (1 << np.arange(b)) if b else np.zeros(k, np.int64)
    x = (high << b) | low
    desc = np.nonzero(x[1:] < x[:-1])[0]
    out_of_range = np.nonzero(x > d - k)[0]
    first_desc = int(desc[0]) + 1 if desc.size else k
    first_oor = int(out_of_range[0]) if out_of_range.size else k
    if first_desc < first_oor:
        i = first_desc
        raise _invalid("index %d at position %d not above its predecessor %d"
                       % (x[i] + i, i, x[i - 1] + i - 1))
    if first_oor < k:
        i = first_oor
        raise _invalid("index %d at position %d out of range [0, %d)" % (x[i] + i, i, d))
    last = upper + int(ones[k - 1]) + 1
    stray = _first_set(bits, last)
    if stray is not None:
        raise _invalid("Elias-Fano bits after the last index: bit %d of the index section is set"
                       % stray)
    return x + np.arange(k), pos + section


def _read_values(buf: bytes, pos: int, value_type: str,
                 indices: Indices) -> npt.NDArray[np.float32]:
    k = indices.size
    need = k * value_bytes(value_type)
    left = len(buf) - pos
    if left < need:
        raise _invalid("truncated value section (%d bytes for %d %s values, %d left)"
                       % (need, k, value_type, left))
    if left > need:
        raise _invalid("%d trailing bytes after the value section" % (left - need))
    if value_type == "fp32":
        v = np.frombuffer(buf, dtype="<f4", count=k, offset=pos).astype(np.float32)
    elif value_type == "fp16":
        v = np.frombuffer(buf, dtype="<f2", count=k, offset=pos).astype(np.float32)
    else:
        raw = np.frombuffer(buf, dtype="<u2", count=k, offset=pos).astype(np.uint32)
        v = (raw << 16).view(np.float32)
    bad = ~np.isfinite(v)
    if bad.any():
        i = int(np.argmax(bad))
        raise _invalid("%s value at position %d (index %d)"
                       % ("NaN" if np.isnan(v[i]) else "Inf", i, indices[i]))
    return v


def decode(data: bytes, expected_dim: int,
           max_k: int) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]:
    """(indices as uint32, values as float32) of untrusted bytes; CodecError
    naming what is wrong otherwise, as the C++ decoder words it."""
    buf = bytes(data)
    value_type, fmt, d, k, pos = _read_header(buf, expected_dim, max_k)
    if fmt == "varint":
        indices, pos = _read_varint_gaps(buf, pos, d, k)
    elif fmt == "bitmap":
        indices, pos = _read_bitmap(buf, pos, d, k)
    elif fmt == "golomb-rice":
        indices, pos = _read_golomb_rice(buf, pos, d, k)
    elif fmt == "elias-fano":
        indices, pos = _read_elias_fano(buf, pos, d, k)
    else:
        if k != d:
            raise _invalid("dense index format needs k == d (k=%d, d=%d)" % (k, d))
        need = k * value_bytes(value_type)
        if len(buf) - pos < need:
            raise _invalid("truncated value section (%d bytes for %d dense %s values, %d left)"
                           % (need, k, value_type, len(buf) - pos))
        indices = np.arange(k, dtype=np.int64)
    values = _read_values(buf, pos, value_type, indices)
    return indices.astype(np.uint32), values


def decode_index_set(data: bytes, expected_dim: int, max_k: int) -> npt.NDArray[np.uint32]:
    """A set of coordinates (ascending uint32) sent as the index section of
    a sparse delta of fp16 zeros, its 2k value bytes cut off
    (common/sparse/index_set_codec.h): how a secure round's support travels.
    The header is read for k, the zero values are put back, and the whole
    goes through decode(), so the set meets every check an upload's indices
    do. CodecError with the C++ message otherwise."""
    buf = bytes(data)
    if len(buf) < 4 or buf[1] != 1:  # value type fp16
        raise CodecError("index set: not an fp16 codec header")
    # d and k: the two LEB128 varints after the three fixed bytes, read as
    # loosely as the C++ does here; decode() holds them to canonical form.
    pos, fields = 3, [0, 0]
    for f in range(2):
        shift = 0
        while True:
            if pos >= len(buf) or shift > 35:
                raise CodecError("index set: truncated header")
            byte = buf[pos]
            pos += 1
            fields[f] |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
    d, k = fields
    if d != expected_dim or k > max_k:
        raise CodecError("index set: %d of %d coordinates, expected at most %d of %d"
                         % (k, d, max_k, expected_dim))
    indices, _ = decode(buf + bytes(2 * k), expected_dim, max_k)
    return indices
