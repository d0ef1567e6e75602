"""Byte accounting as both C++ ends keep it (common/net/accounting.h): every
gRPC message at its serialized size plus gRPC's 5-byte message header, per
round, per logical client (-1: the daemon as a whole) and per model (-1:
none), payload (model and delta chunks, masked inputs) apart from control,
by direction. The coordinator applies the
same rule to the same messages, so the per-client figures agree exactly;
the round lines go to <out>/<name>.jsonl with the C++ daemon's fields."""
from __future__ import annotations

import json
import resource
import threading
from typing import Any

from .codec import varint_length

GRPC_MESSAGE_HEADER = 5
DAEMON = -1
NO_MODEL = -1
_SECURE_KINDS = ("secure_setup", "secure_roster", "secure_boxes", "secure_unmask")
# A generated protobuf message (shefl_client._proto is untyped).
Message = Any


def wire_size(message: Message) -> int:
    return int(message.ByteSize()) + GRPC_MESSAGE_HEADER


def feed_round(message: Message, current: int) -> int:
    """The round a feed message is booked under: a task's, a round end's or
    a secure stage's own; `current` for the rest (FeedRound in C++)."""
    kind = message.WhichOneof("kind")
    if kind in ("task", "round_end") or kind in _SECURE_KINDS:
        return int(getattr(message, kind).round)
    return current


def feed_client(message: Message) -> int:
    """A task's client; DAEMON for everything else (FeedClient)."""
    return int(message.task.client_id) if message.WhichOneof("kind") == "task" else DAEMON


def feed_model(message: Message) -> int:
    """A secure stage's model; NO_MODEL for everything else (FeedModel)."""
    kind = message.WhichOneof("kind")
    return int(getattr(message, kind).model_id) if kind in _SECURE_KINDS else NO_MODEL


def is_secure_stage(message: Message) -> bool:
    """A message of secure aggregation's stages (SecureStage is not "")."""
    return message.WhichOneof("kind") in _SECURE_KINDS


def label_count_bytes(client: Message) -> int:
    """The bytes a LogicalClient's label histogram adds to the feed request
    (booked under that client; LabelCountBytes in C++)."""
    if not client.label_counts:
        return 0
    without = type(client)()
    without.CopyFrom(client)
    del without.label_counts[:]

    def embedded(n: int) -> int:
        return n + varint_length(n)
    return embedded(int(client.ByteSize())) - embedded(int(without.ByteSize()))


class Ledger:
    """Thread-safe per-round books, and the round's line once it ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # round -> client -> [payload_up, payload_down, control_up, control_down]
        self._rounds: dict[int, dict[int, list[int]]] = {}
        # round -> model -> the same counts (not in the round line, which
        # has the C++ daemon's fields; the coordinator's has them by model)
        self._models: dict[int, dict[int, list[int]]] = {}
        self._train_seconds: dict[int, float] = {}
        self._train_samples: dict[int, int] = {}
        # round -> [logical_up, logical_down, physical_up, physical_down]
        self._downloads: dict[int, list[int]] = {}
        # round -> phase -> seconds (where a round's time went)
        self._phases: dict[int, dict[str, float]] = {}

    def book(self, rnd: int, client: int, up: bool, payload: bool, nbytes: int,
             model: int = NO_MODEL) -> None:
        slot = (0 if up else 1) if payload else (2 if up else 3)
        with self._lock:
            counts = self._rounds.setdefault(rnd, {}).setdefault(client, [0, 0, 0, 0])
            counts[slot] += nbytes
            counts = self._models.setdefault(rnd, {}).setdefault(model, [0, 0, 0, 0])
            counts[slot] += nbytes

    def add_training(self, rnd: int, seconds: float, samples: int) -> None:
        with self._lock:
            self._train_seconds[rnd] = self._train_seconds.get(rnd, 0.0) + seconds
            self._train_samples[rnd] = self._train_samples.get(rnd, 0) + samples

    def add_phase(self, rnd: int, phase: str, seconds: float) -> None:
        with self._lock:
            phases = self._phases.setdefault(rnd, {})
            phases[phase] = phases.get(phase, 0.0) + seconds

    def add_download(self, rnd: int, logical_up: int, logical_down: int, physical_up: int,
                     physical_down: int) -> None:
        with self._lock:
            d = self._downloads.setdefault(rnd, [0, 0, 0, 0])
            for i, v in enumerate((logical_up, logical_down, physical_up, physical_down)):
                d[i] += v

    def by_client(self, rnd: int) -> dict[int, list[int]]:
        with self._lock:
            return {c: list(v) for c, v in self._rounds.get(rnd, {}).items()}

    def by_model(self, rnd: int) -> dict[int, list[int]]:
        with self._lock:
            return {m: list(v) for m, v in self._models.get(rnd, {}).items()}

    def round_line(self, rnd: int, daemon_name: str) -> dict[str, Any]:
        """The C++ daemon's round record (WriteRoundLine), and forgets the
        per-round figures up to `rnd`."""
        with self._lock:
            clients = {c: list(v) for c, v in self._rounds.get(rnd, {}).items()}
            total = [sum(v[i] for v in clients.values()) for i in range(4)]
            daemon = clients.pop(DAEMON, [0, 0, 0, 0])
            dl = self._downloads.get(rnd, [0, 0, 0, 0])
            line = {
                "round": rnd, "daemon": daemon_name,
                "bytes_up": total[0], "bytes_down": total[1], "control_bytes": total[2] + total[3],
                "train_seconds": self._train_seconds.get(rnd, 0.0),
                "train_samples": self._train_samples.get(rnd, 0),
                "download_bytes_logical": dl[0] + dl[1],
                "download_bytes_physical": dl[2] + dl[3],
                "downloads": {"logical": {"up": dl[0], "down": dl[1]},
                              "physical": {"up": dl[2], "down": dl[3]}},
                "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                "bytes_by_client": {str(c): _counts_json(v) for c, v in sorted(clients.items())},
                "daemon_bytes": _counts_json(daemon),
                # The Python client's own: seconds by phase (download,
                # load, train, compress: delta, top-k, encoding, residual;
                # upload), summed over the round's tasks.
                "phase_seconds": {k: round(v, 6) for k, v in
                                  sorted(self._phases.get(rnd, {}).items())},
            }
            tables: tuple[dict[int, Any], ...] = (
                self._train_seconds, self._train_samples, self._downloads, self._phases)
            for table in tables:
                for r in [r for r in table if r <= rnd]:
                    del table[r]
            return line


def _counts_json(v: list[int]) -> dict[str, int]:
    return {"payload_up": v[0], "payload_down": v[1], "control_up": v[2], "control_down": v[3]}


def append_line(path: str, line: dict[str, Any]) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(line, separators=(",", ":")) + "\n")
