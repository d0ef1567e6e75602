"""The arithmetic around the masks of a secure round, as
common/secure/secure_input.h:
  - a party turns each hosted client's update for a model into fixed-point
    words on the common support C_t and adds them up (add_client_input):
    its input before masking. What a client did not send stays in its
    error-feedback residual: everything off C_t, and on C_t what clipping
    and rounding took off, in the client's own units;
  - the coordinator turns the unmasked sum back into the model's update on
    C_t (secure_update): the sum read as fixed point over the weight mass
    of the parties that survived.
With a vote (common/secure/vote_counts.h), each client also counts its own
top-k positions per row and per column of the larger tensors into the
words after the K values (own_top_k, add_vote_counts).
Each client rounds with its own generator, MT19937_64 from (run seed,
SECURE_ROUNDING, round, model, client), and every step rounds as the C++
does (float32 sums, double products), so a Python party's words are the C++
party's bit for bit, however clients are packed into parties.
Pure functions; thread-safe."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import numpy.typing as npt

from ..rng import SECURE_ROUNDING, make_rng
from .fixed_point import encode_fixed_point
from .masks import words
from .primitives import InvalidArgument, Words

Floats = npt.NDArray[np.float32]


@dataclass
class SecureEncoding:
    """What every party of a (round, model) agrees on."""
    support: npt.NDArray[np.uint32] = field(
        default_factory=lambda: np.zeros(0, dtype=np.uint32))  # C_t, ascending
    clip: float = 0.0     # c: each value is clipped to [-c, c]
    scale_bits: int = 24  # f
    seed: int = 0         # the run's seed
    round: int = 0
    model: int = 0
    # The vote's grids (offset, rows, cols); empty: no vote. Their counts
    # follow the K value words.
    vote: list[tuple[int, int, int]] = field(default_factory=list)
    # 16 or 32 (secure.word_bits): the K values travel mod 2^word_bits.
    word_bits: int = 32
    # privacy.mode distributed (party_noise.py): the variance of the Skellam
    # noise each party adds to each K value word (0: none), and the seed its
    # noise key derives from (0: a fresh key).
    noise_mu: float = 0.0
    noise_seed: int = 0

    def words(self) -> int:
        """K + V: the words of every party's input."""
        return int(np.asarray(self.support).size) + sum(r + c for _, r, c in self.vote)


def _fmt(v: float) -> str:
    """A double as absl::StrCat writes it (%g, six significant digits)."""
    return "%g" % v


def own_top_k(x: Floats, k: int) -> npt.NDArray[np.int64]:
    """The positions of the top min(k, |x|) magnitudes of x, ascending: ties
    to the lower coordinate, NaN never ahead of a number (OwnTopK's rule)."""
    d = x.size
    k = min(int(k), d)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    mags = np.abs(x.astype(np.float32))
    mags[np.isnan(mags)] = -1.0
    threshold = np.partition(mags, d - k)[d - k]  # the k-th largest
    above = np.flatnonzero(mags > threshold)
    ties = np.flatnonzero(mags == threshold)[:k - above.size]
    return np.sort(np.concatenate([above, ties]))


def add_vote_counts(positions: npt.ArrayLike, vote: list[tuple[int, int, int]],
                    base: int, q: Words) -> Words:
    """q with one count per position added to its row's and its column's word
    of the grid that holds it (grid g's words from base plus the marginals
    of the grids before it, rows then columns); AddVoteCounts' layout."""
    p = np.asarray(positions, dtype=np.int64)
    out = q.copy()
    at = base
    for offset, rows, cols in vote:
        inside = p[(p >= offset) & (p < offset + rows * cols)] - offset
        out[at:at + rows] += np.bincount(inside // cols, minlength=rows).astype(np.uint32)
        out[at + rows:at + rows + cols] += np.bincount(
            inside % cols, minlength=cols).astype(np.uint32)
        at += rows + cols
    return out


def _l2_scale(x: Floats, support: npt.NDArray[np.int64], l2_clip: float) -> float:
    """min(1, l2_clip / ||x on the support||) rounded down to 21 significant
    bits, the norm summed in support order in double as the C++ party
    does (never numpy's pairwise sum); 1 without a clip; 0 for a norm that
    is not finite."""
    if l2_clip == 0:
        return 1.0
    squares = 0.0
    for v in x[support].astype(np.float64).tolist():
        squares += v * v
    norm = math.sqrt(squares)
    if not math.isfinite(norm):
        return 0.0
    if not norm > l2_clip:
        return 1.0
    m, e = math.frexp(l2_clip / norm)
    return math.ldexp(math.floor(math.ldexp(m, 21)), e - 21)


def add_client_input(delta: npt.ArrayLike, weight: float, client: int,
                     encoding: SecureEncoding, residual: Optional[npt.ArrayLike],
                     q: Optional[Words], own_k: int = 0,
                     l2_clip: float = 0.0) -> tuple[Floats, Words]:
    """(the client's next residual, the party's input with its words added).
    x = delta + residual (float32; residual None or empty means zeros); on
    C_t the client adds round(weight * clip(x) * 2^f) to q (None or empty
    before the first client); the residual is x less what was sent, divided
    back by the weight. `weight` is the client's public weight, in (0, 1].
    With a vote, the client's own top `own_k` positions of x are counted
    into the words after the K values. With `l2_clip` > 0 (privacy.mode
    distributed) the K values of x are first scaled to L2 norm at most
    l2_clip. InvalidArgument as AddClientInput refuses."""
    x = np.array(delta, dtype=np.float32).reshape(-1)
    d, support = x.size, np.asarray(encoding.support, dtype=np.int64)
    k, n_words = support.size, encoding.words()
    if not (weight > 0 and weight <= 1):
        raise InvalidArgument("secure aggregation: client %d's weight %s is not in (0, 1]"
                              % (client, _fmt(weight)))
    if l2_clip < 0 or not math.isfinite(l2_clip):
        raise InvalidArgument("secure aggregation: client %d's L2 clip %s is not >= 0"
                              % (client, _fmt(l2_clip)))
    r = None if residual is None else np.asarray(residual, dtype=np.float32).reshape(-1)
    if r is not None and r.size and r.size != d:
        raise InvalidArgument("secure aggregation: client %d's residual has %d entries, its "
                              "update %d" % (client, r.size, d))
    if q is not None and q.size and q.size != n_words:
        raise InvalidArgument("secure aggregation: inputs of two sizes")
    if k and int(support[-1]) >= d:
        raise InvalidArgument("secure aggregation: support coordinate %d beyond the model's %d"
                              % (int(support[-1]), d))
    for offset, rows, cols in encoding.vote:
        if cols == 0 or offset + rows * cols > d:
            raise InvalidArgument("secure aggregation: a vote grid of %d x %d at %d beyond the "
                                  "model's %d" % (rows, cols, offset, d))
    if r is not None and r.size:
        x = x + r  # float32 sums, as the C++ loop
    # The vote counts where the update itself is large, before what is sent
    # leaves x.
    own = own_top_k(x, own_k) if encoding.vote else np.zeros(0, dtype=np.int64)
    # fmax/fmin as C's: a NaN gives way to the bound.
    scale = _l2_scale(x, support, l2_clip)
    v = (np.zeros(k, dtype=np.float64) if scale == 0
         else x[support].astype(np.float64) * scale)
    weighted = (weight * np.fmin(np.fmax(v, -encoding.clip), encoding.clip)).astype(np.float32)
    rng = make_rng(encoding.seed, SECURE_ROUNDING, (encoding.round, encoding.model, client))
    enc = encode_fixed_point(weighted, encoding.clip, encoding.scale_bits, rng)
    # What was sent, in the client's own units, leaves its books; the rest
    # (all of x off the support) stays.
    sent = np.ldexp(enc.q.view(np.int32).astype(np.float64), -encoding.scale_bits) / weight
    x[support] = (x[support].astype(np.float64) - sent).astype(np.float32)
    total = words(np.zeros(n_words, dtype=np.uint32) if q is None or not q.size else q)
    total = total.copy()
    total[:k] += enc.q  # uint32 wraps mod 2^32
    return x, add_vote_counts(own, encoding.vote, k, total)


def input_bytes(y: npt.ArrayLike, encoding: SecureEncoding) -> bytes:
    """A masked input's words on the wire (ToProto's layout): the K values
    little-endian in word_bits bits (mod 2^16 at 16), the vote's counts in
    32."""
    w = words(y)
    k = int(np.asarray(encoding.support).size)
    value_type = "<u2" if encoding.word_bits == 16 else "<u4"
    values = (w[:k] & 0xFFFF).astype(value_type) if encoding.word_bits == 16 else w[:k]
    return (np.asarray(values, dtype=value_type).tobytes()
            + np.asarray(w[k:], dtype="<u4").tobytes())


def secure_update(total: npt.ArrayLike, weight_mass: float,
                  encoding: SecureEncoding) -> Floats:
    """The model's update on C_t (values in support order) from the
    unmasked sum of the survivors' inputs and their weight mass."""
    s = words(total)
    k = np.asarray(encoding.support).size
    if s.size != encoding.words():
        raise InvalidArgument("secure aggregation: a sum of %d words for a support of %d and a "
                              "vote of %d" % (s.size, k, encoding.words() - k))
    s = s[:k]
    if not (weight_mass > 0) or not math.isfinite(weight_mass):
        raise InvalidArgument("secure aggregation: no weight survived")
    signed = s.view(np.int32).astype(np.float64)
    return (np.ldexp(signed, -encoding.scale_bits) / weight_mass).astype(np.float32)
