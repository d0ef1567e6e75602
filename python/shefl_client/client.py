"""The Python client: a daemon hosting logical clients, speaking the C++
daemon's protocol (client/daemon.h). It registers (TLS, mutual TLS, token,
or `auto:N`), holds the task feed, sends heartbeats into silences,
reconnects with backoff and jitter, fetches each model version once for
all of its clients, loads it into the user's torch.nn.Module, calls the
user's training function, and uploads the top-k delta in chunks, booking
every byte as the C++ daemon does."""
from __future__ import annotations

import random
from typing import Any, Optional

import grpc

from .client_session import Session
from .session_items import SessionEnd
from .client_state import ClientState, ModelFn, NumSamplesFn, TrainFn
from .options import ClientError, Options, log, parse_clients

__all__ = ["Client", "ClientError", "Options", "log", "parse_clients"]


class Client(ClientState):
    """model: config dict -> torch.nn.Module with the coordinator's flat
    layout. train: (module, TrainContext) -> mean training loss. num_samples
    (optional): client id -> shard size, for data the client brings itself;
    without it the run's data set is loaded and partitioned as the C++
    daemons do, and TrainContext carries the shard. Thread-safety: run()
    from one thread; `stop.set()` from any thread ends it."""

    def __init__(self, options: Options, model: ModelFn, train: TrainFn,
                 num_samples: Optional[NumSamplesFn] = None) -> None:
        super().__init__(options, model, train, num_samples)
        self.credentials = _channel_credentials(options)

    def run(self) -> None:
        """Returns when the coordinator ends the run (or stop is set);
        raises ClientError when the coordinator refuses this client."""
        delay = self.o.initial_backoff_s
        jitter = random.Random()
        while not self.stop.is_set():
            end = self._one_session()
            if end == SessionEnd.SHUTDOWN or self.stop.is_set():
                return
            if end == SessionEnd.LOST:
                delay = self.o.initial_backoff_s  # a session ran: start over
            wait = delay * (0.5 + jitter.random())
            delay = min(delay * 2, self.o.max_backoff_s)
            log(self.o.name, "coordinator %s %s; reconnecting in %.2f s" % (
                self.o.coordinator, "went away" if end == SessionEnd.LOST else "unreachable", wait))
            self.stop.wait(wait)

    def _one_session(self) -> str:
        options: list[tuple[str, Any]] = [
            ("grpc.keepalive_time_ms", 10000), ("grpc.keepalive_timeout_ms", 5000),
            ("grpc.keepalive_permit_without_calls", 1), ("grpc.http2.max_pings_without_data", 0)]
        if self.o.tls_server_name:
            options.append(("grpc.ssl_target_name_override", self.o.tls_server_name))
        if self.credentials is None:
            channel = grpc.insecure_channel(self.o.coordinator, options=options)
        else:
            channel = grpc.secure_channel(self.o.coordinator, self.credentials, options=options)
        with channel:
            return Session(self, channel).run()


def _read_file(flag: str, path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ClientError("%s '%s': %s" % (flag, path, e.strerror)) from None


def _channel_credentials(o: Options) -> Any:
    """grpc.ChannelCredentials, or None under --insecure."""
    if o.insecure:
        log(o.name, "WARNING: --insecure: plaintext, no certificate checks")
        return None
    if bool(o.tls_cert) != bool(o.tls_key):
        raise ClientError("--tls-cert and --tls-key go together")
    ca = _read_file("--tls-ca", o.tls_ca) if o.tls_ca else None
    key = _read_file("--tls-key", o.tls_key) if o.tls_key else None
    cert = _read_file("--tls-cert", o.tls_cert) if o.tls_cert else None
    return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                        certificate_chain=cert)
