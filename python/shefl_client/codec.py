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
"""

import numpy as np

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


def value_bytes(value_type):
    return 4 if value_type == "fp32" else 2


# ----------------------------------------------------------------- sizes

def varint_length(v):
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def _varint_lengths(values):
    """Bytes of each LEB128 varint of a uint64 array."""
    v = values.astype(np.uint64)
    return (1 + (v >= 1 << 7).astype(np.int64) + (v >= 1 << 14) + (v >= 1 << 21)
            + (v >= 1 << 28) + (v >= 1 << 35))


def index_code_parameter(d, k):
    """b minimising k(b+1) + ((d-k) >> b), smallest on a tie; 0 for k = 0."""
    if k == 0:
        return 0
    best, best_bits = 0, k + (d - k)
    for b in range(1, 32):
        bits = k * (b + 1) + ((d - k) >> b)
        if bits < best_bits:
            best, best_bits = b, bits
    return best


def elias_fano_bits(d, k):
    if k == 0:
        return 0
    b = index_code_parameter(d, k)
    return k * (b + 1) + ((d - k) >> b)


def _gaps(indices):
    idx = indices.astype(np.int64)
    prev = np.concatenate(([-1], idx[:-1])) if idx.size else idx
    return idx - prev - 1


def index_section_sizes(d, indices):
    """Bytes of each form's index section (None where it does not apply)."""
    k = int(indices.size)
    gaps = _gaps(indices)
    b = index_code_parameter(d, k)
    rice_bits = k * (b + 1) + int(np.sum(gaps >> b)) if k else 0
    return {
        "varint": int(np.sum(_varint_lengths(gaps))) if k else 0,
        "bitmap": (d + 7) // 8,
        "golomb-rice": (rice_bits + 7) // 8,
        "elias-fano": (elias_fano_bits(d, k) + 7) // 8,
        "dense": 0 if k == d else None,
    }


def plan_format(d, indices):
    sizes = index_section_sizes(d, indices)
    best = None
    for f in PREFERENCE:
        if sizes[f] is not None and (best is None or sizes[f] < sizes[best]):
            best = f
    return best


# ------------------------------------------------------------ encoding

def _put_varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _encode_varints(values):
    """LEB128 of every element of a uint64 array, concatenated (vectorised)."""
    if values.size == 0:
        return b""
    v = values.astype(np.uint64)
    lengths = _varint_lengths(v)
    groups = np.stack([(v >> np.uint64(7 * j)) & np.uint64(0x7F) for j in range(6)], axis=1)
    cont = np.arange(6)[None, :] < (lengths[:, None] - 1)
    keep = np.arange(6)[None, :] < lengths[:, None]
    data = (groups | (cont.astype(np.uint64) << np.uint64(7)))[keep]
    return data.astype(np.uint8).tobytes()


def _pack_bits(ones, nbits):
    """A bit stream of nbits bits with ones at the given positions, LSB
    first in each byte, zero-padded to a byte."""
    bits = np.zeros(((nbits + 7) // 8) * 8, dtype=np.uint8)
    bits[ones] = 1
    return np.packbits(bits, bitorder="little").tobytes()


def _write_golomb_rice(d, indices):
    k = int(indices.size)
    if k == 0:
        return b""
    b = index_code_parameter(d, k)
    gaps = _gaps(indices)
    q = gaps >> b
    lens = q + 1 + b
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    ones = [starts + q]  # the unary terminator
    for j in range(b):  # the low b bits of each gap, least significant first
        bit = ((gaps >> j) & 1).astype(bool)
        ones.append((starts + q + 1 + j)[bit])
    return _pack_bits(np.concatenate(ones), int(np.sum(lens)))


def _write_elias_fano(d, indices):
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


def _write_indices(d, indices, fmt):
    if fmt == "varint":
        return _encode_varints(_gaps(indices))
    if fmt == "bitmap":
        bits = np.zeros(((d + 7) // 8) * 8, dtype=np.uint8)
        bits[indices.astype(np.int64)] = 1
        return np.packbits(bits, bitorder="little").tobytes()
    if fmt == "golomb-rice":
        return _write_golomb_rice(d, indices)
    if fmt == "elias-fano":
        return _write_elias_fano(d, indices)
    return b""  # dense


def _fmt_float(x):
    """A float as absl::StrCat prints it (%g, six significant digits)."""
    return "%g" % float(x)


def _narrow(values, value_type):
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


def _validate(d, indices, values):
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


def encode(d, indices, values, value_type="fp32", fmt=None):
    """The bytes of a sparse delta: indices ascending and unique in [0, d),
    values float32 in index order. fmt: one of FORMATS to force a form;
    None takes the smallest, as the C++ encoder does."""
    indices = np.asarray(indices, dtype=np.uint32)
    values = np.ascontiguousarray(values, dtype=np.float32)
    _validate(d, indices, values)
    k = int(indices.size)
    if fmt is None:
        fmt = plan_format(d, indices)
    elif fmt not in FORMATS:
        raise CodecError("unknown index format %r" % (fmt,))
    elif fmt == "dense" and k != d:
        raise CodecError("dense index format needs k == d (k=%d, d=%d)" % (k, d))
    bits, bad = _narrow(values, value_type)
    if bad is not None:
        v = values[bad]
        why = "is NaN" if np.isnan(v) else "is Inf" if np.isinf(v) else \
            "%s overflows %s" % (_fmt_float(v), value_type)
        raise CodecError("value at position %d (index %d) %s" % (bad, indices[bad], why))
    header = bytes([MAGIC_VERSION, VALUE_TYPES[value_type], FORMATS[fmt]])
    return (header + _put_varint(d) + _put_varint(k) + _write_indices(d, indices, fmt)
            + bits.astype("<u%d" % value_bytes(value_type)).tobytes())


# ------------------------------------------------------------ decoding

def _invalid(msg):
    return CodecError("sparse delta: " + msg)


def _get_varint(buf, pos, max_bytes, max_value, where):
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


def _read_header(buf, expected_dim, max_k):
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


def _read_varint_gaps(buf, pos, d, k):
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


def _read_bitmap(buf, pos, d, k):
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


def _bits_of(buf, pos, end):
    return np.unpackbits(np.frombuffer(buf, dtype=np.uint8, count=end - pos, offset=pos),
                         bitorder="little")


def _first_set(bits, start):
    rest = np.nonzero(bits[start:])[0]
    return None if rest.size == 0 else start + int(rest[0])


def _read_golomb_rice(buf, pos, d, k):
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


def _read_elias_fano(buf, pos, d, k):
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


def _read_values(buf, pos, value_type, indices):
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


def decode(data, expected_dim, max_k):
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
