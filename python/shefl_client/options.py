"""What every part of the client shares and imports from here (so that no
two of them import each other): the daemon's options, the error that ends
it, the --clients parser and the log line."""
from __future__ import annotations

import dataclasses
import os
import sys
import time

ADVERSARIES = ("", "huge", "flip")


class ClientError(RuntimeError):
    """The client cannot go on (refused registration, bad options)."""


@dataclasses.dataclass
class Options:
    """The C++ daemon's flags, by the same names (see cli.add_flags).
    `name` defaults to shefl-py-client-<pid>, `state_dir` to <out>/state."""

    coordinator: str
    clients: str
    name: str = ""
    out: str = "."
    state_dir: str = ""
    tls_ca: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    tls_server_name: str = ""
    token_file: str = ""
    insecure: bool = False
    device: str = "cpu"
    heartbeat_s: float = 30.0
    initial_backoff_s: float = 0.25
    max_backoff_s: float = 30.0
    capacity: int = 0
    threads: int = 1
    adversary: str = ""
    dp_min_multiplier: float = 0.0

    def __post_init__(self) -> None:
        self.name = self.name or "shefl-py-client-%d" % os.getpid()
        self.state_dir = self.state_dir or os.path.join(self.out, "state")
        if self.adversary not in ADVERSARIES:
            raise ClientError("--adversary '%s': the Python client lies as huge or flip"
                              % self.adversary)
        if not 0 <= self.dp_min_multiplier <= 1e6:
            raise ClientError("--dp-min-multiplier '%g': expected a multiplier from 0 to 1e6"
                              % self.dp_min_multiplier)


def parse_clients(text: str) -> tuple[list[int], int]:
    """'0-4,10' -> ([0, 1, 2, 3, 4, 10], 0); 'auto:N' -> ([], N)."""
    if text.startswith("auto:"):
        n = text[5:]
        if not n.isdigit() or int(n) < 1:
            raise ClientError("--clients '%s': expected auto:N with N >= 1" % text)
        return [], int(n)
    ids: set[int] = set()
    bad = ("--clients '%s': expected ranges like 0-24, 0-4,10-14 or 0-90/10 "
           "(every 10th)" % text)
    for part in text.split(","):
        span, _, step = part.partition("/")
        ends = span.split("-")
        if len(ends) > 2 or not all(e.isdigit() for e in ends):
            raise ClientError(bad)
        if "/" in part and (len(ends) != 2 or not step.isdigit() or int(step) < 1):
            raise ClientError(bad)
        lo, hi = int(ends[0]), int(ends[-1])
        if hi < lo:
            raise ClientError(bad)
        ids.update(range(lo, hi + 1, int(step) if step else 1))
    return sorted(ids), 0


def log(name: str, text: str) -> None:
    """One line on stderr: time, daemon name, text (as the C++ daemon logs)."""
    sys.stderr.write("%s [%s] %s\n" % (time.strftime("%H:%M:%S"), name, text))
    sys.stderr.flush()
