"""Top-k with the C++ tie rule, and error feedback with residuals kept on
disk in the C++ daemon's own file format (common/learn/compress.h,
client/residual_book.h), so a client's residuals survive a restart."""
from __future__ import annotations

import os
import struct
import threading
from typing import Iterable, Optional, Union

import numpy as np
import torch

from . import codec


def top_k(delta: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(indices int64 ascending, values float32) of the k entries of largest
    magnitude of a 1-D fp32 tensor; ties at the k-th magnitude go to the
    lower indices (TopKIndices in common/learn/compress.cc)."""
    if delta.dim() != 1 or delta.dtype != torch.float32:
        raise ValueError("top-k needs a 1-D fp32 tensor")
    if not bool(torch.isfinite(delta).all()):
        bad = int((~torch.isfinite(delta)).nonzero()[0])
        raise ValueError("the delta holds NaN or Inf at index %d" % bad)
    d = delta.numel()
    k = max(0, min(int(k), d))
    if k == 0:
        idx = torch.empty(0, dtype=torch.int64, device=delta.device)
    elif k == d:
        idx = torch.arange(d, device=delta.device)
    else:
        mag = delta.abs()
        t = torch.kthvalue(mag, d - k + 1).values
        idx = (mag >= t).nonzero().squeeze(1)
        if idx.numel() != k:
            at_t = mag == t
            above = mag > t
            need = k - int(above.sum())
            first_ties = at_t & (at_t.cumsum(0) <= need)
            idx = (above | first_ties).nonzero().squeeze(1)
    return idx, delta.index_select(0, idx)


def fingerprint(text: Union[str, bytes]) -> int:
    """FNV-1a of the run's config text: names the residual files' run."""
    h = 1469598103934665603
    for c in text.encode() if isinstance(text, str) else text:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


_MAGIC = b"SHEFLEF1"
_HEADER = struct.Struct("<Qqq")  # fingerprint, round, numel (uint64 on disk)
Key = tuple[int, int]  # (client, model)


class ResidualBook:
    """Per (client, model): the residuals by the round whose upload left
    them. Staged before the upload goes (on disk, durably), committed by
    an acceptance, discarded by a refusal; a round handed out again drops
    that round and later (see client/residual_book.h for why). Files:
    <dir>/c<client>-m<model>-r<round>.ef, the three newest rounds kept.
    Thread-safe: the workers of one daemon share it."""

    def __init__(self, directory: str, fp: int) -> None:
        self.dir, self.fp = directory, fp
        self._book: dict[Key, dict[int, torch.Tensor]] = {}  # the residuals by round
        self._files: dict[Key, set[int]] = {}                # the rounds on disk
        self._lock = threading.Lock()

    def _path(self, key: Key, rnd: int) -> str:
        return os.path.join(self.dir, "c%d-m%d-r%d.ef" % (key[0], key[1], rnd))

    def _remove(self, key: Key, rnd: int) -> None:
        rounds = self._files.get(key)
        if not rounds or rnd not in rounds:
            return
        rounds.discard(rnd)
        try:
            os.unlink(self._path(key, rnd))
        except FileNotFoundError:
            pass
        if not rounds:
            del self._files[key]

    def load(self, clients: Iterable[int]) -> int:
        """Reads the residuals of `clients` this run's config left; returns
        how many (client, model) pairs have one."""
        if not self.dir:
            return 0
        os.makedirs(self.dir, exist_ok=True)
        wanted = set(clients)
        for name in os.listdir(self.dir):
            parts = name[:-3].split("-") if name.endswith(".ef") else []
            try:
                c, m, r = int(parts[0][1:]), int(parts[1][1:]), int(parts[2][1:])
                assert parts[0][0] == "c" and parts[1][0] == "m" and parts[2][0] == "r"
            except (IndexError, ValueError, AssertionError):
                continue
            if c not in wanted:
                continue
            with open(os.path.join(self.dir, name), "rb") as f:
                data = f.read()
            if len(data) < 8 + _HEADER.size or data[:8] != _MAGIC:
                continue
            fp, rnd, numel = _HEADER.unpack_from(data, 8)
            body = data[8 + _HEADER.size:]
            if fp != self.fp or rnd != r or len(body) != 4 * numel:
                continue
            residual = torch.from_numpy(np.frombuffer(body, dtype="<f4").copy())
            self._book.setdefault((c, m), {})[r] = residual
            self._files.setdefault((c, m), set()).add(r)
        return len(self._book)

    def in_force(self, client: int, model: int, rnd: int) -> Optional[torch.Tensor]:
        key = (client, model)
        with self._lock:
            for r in [r for r in self._files.get(key, ()) if r >= rnd]:
                self._remove(key, r)
            rounds = self._book.get(key)
            if not rounds:
                return None
            for r in [r for r in rounds if r >= rnd]:
                del rounds[r]
            if not rounds:
                del self._book[key]
                return None
            for r in sorted(rounds)[:-2]:
                del rounds[r]
            return rounds[max(rounds)]

    def stage(self, client: int, model: int, rnd: int, residual: torch.Tensor) -> None:
        key = (client, model)
        cpu = residual.detach().to("cpu", torch.float32).contiguous()
        if self.dir:
            data = _MAGIC + _HEADER.pack(self.fp, rnd, cpu.numel()) + cpu.numpy().astype("<f4").tobytes()
            _write_durably(self._path(key, rnd), data)
        with self._lock:
            self._book.setdefault(key, {})[rnd] = cpu
            if self.dir:
                on_disk = self._files.setdefault(key, set())
                on_disk.add(rnd)
                while len(on_disk) > 3:
                    self._remove(key, min(on_disk))

    def discard(self, client: int, model: int, rnd: int) -> None:
        key = (client, model)
        with self._lock:
            self._remove(key, rnd)
            rounds = self._book.get(key)
            if rounds is not None:
                rounds.pop(rnd, None)
                if not rounds:
                    del self._book[key]

    def __len__(self) -> int:
        return len(self._book)


def _write_durably(path: str, data: bytes) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class DeltaCompressor:
    """Error feedback (when on), top-k, encoding; the residual left is what
    the coordinator will decode subtracted from what was meant to be sent
    (so fp16/bf16 rounding is fed back too): DeltaCompressor in C++.
    Thread-safe as its ResidualBook is."""

    def __init__(self, value_type: str, error_feedback: bool, state_dir: str = "",
                 fp: int = 0) -> None:
        self.value_type = value_type
        self.residuals = ResidualBook(state_dir, fp) if error_feedback else None

    def compress(self, client: int, model: int, rnd: int, delta: torch.Tensor,
                 k: int) -> tuple[bytes, int]:
        """(encoded bytes, nnz)."""
        corrected = delta
        if self.residuals is not None:
            r = self.residuals.in_force(client, model, rnd)
            if r is not None and r.shape == delta.shape:
                corrected = delta + r.to(delta.device)
        idx, vals = top_k(corrected, k)
        idx_np = idx.cpu().numpy().astype(np.uint32)
        vals_np = vals.cpu().numpy().astype(np.float32)
        encoded = codec.encode(delta.numel(), idx_np, vals_np, self.value_type)
        if self.residuals is not None:
            sent = vals_np
            if self.value_type != "fp32":
                _, sent = codec.decode(encoded, delta.numel(), len(idx_np))
            residual = corrected.detach().to("cpu").clone()
            residual[idx.cpu()] -= torch.from_numpy(np.asarray(sent, dtype=np.float32))
            self.residuals.stage(client, model, rnd, residual)
        return encoded, len(idx_np)

    def settle(self, client: int, model: int, rnd: int, accepted: bool) -> None:
        if self.residuals is not None and not accepted:
            self.residuals.discard(client, model, rnd)
