"""A party's side of the support diagnosis (secure.diagnose, clear_support
only), as common/secure/support_diagnosis.h: the dense sum of its clients'
weighted, clipped x = delta + residual on every coordinate, and the union of
their own top-k positions, sent beside the clear input so the coordinator
can say how much of the round's sum, and of what the clients would have
sent on their own, the support held. Never sent in a masked session."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import numpy.typing as npt

from .secure_input import own_top_k


@dataclass
class SupportDiagnosis:
    dense: Optional[npt.NDArray[np.float64]] = None
    own_union: npt.NDArray[np.uint32] = field(
        default_factory=lambda: np.zeros(0, dtype=np.uint32))


def add_client_diagnosis(delta: npt.ArrayLike, residual: Optional[npt.ArrayLike], weight: float,
                         clip: float, own_k: int, d: SupportDiagnosis) -> None:
    """Adds one client: weight * clip(delta + residual) everywhere (x formed
    in float32, as the words are; NaN counts 0), and its own top `own_k`."""
    x = np.asarray(delta, dtype=np.float32).copy()
    if residual is not None and np.size(residual) == x.size:
        x = (x + np.asarray(residual, dtype=np.float32)).astype(np.float32)
    v = np.clip(np.nan_to_num(x.astype(np.float64), nan=0.0), -clip, clip)
    if d.dense is None:
        d.dense = np.zeros(x.size, dtype=np.float64)
    d.dense += weight * v
    mine = np.asarray(own_top_k(x, own_k), dtype=np.uint32)
    d.own_union = np.union1d(d.own_union, mine).astype(np.uint32)


def dense_bytes(d: SupportDiagnosis) -> bytes:
    """The dense sum as float32, little-endian."""
    return np.asarray(d.dense, dtype="<f4").tobytes()


def union_bytes(d: SupportDiagnosis) -> bytes:
    """The union as ascending uint32, little-endian."""
    return np.asarray(d.own_union, dtype="<u4").tobytes()
