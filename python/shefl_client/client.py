"""The Python client: a daemon hosting logical clients, speaking the C++
daemon's protocol (client/daemon.h). It registers (TLS, mutual TLS, token,
or `auto:N`), holds the task feed, sends heartbeats into silences,
reconnects with backoff and jitter, fetches each model version once for
all of its clients, loads it into the user's torch.nn.Module, calls the
user's training function, and uploads the top-k delta in chunks, booking
every byte as the C++ daemon does."""
import os
import random
import sys
import threading
import time

import grpc
import torch
import yaml

from . import books as B
from . import flat
from .client_session import Session, SessionEnd
from .compress import DeltaCompressor, fingerprint
from .data import load_training_set
from .partition import training_indices


class ClientError(RuntimeError):
    """The client cannot go on (refused registration, bad options)."""


def parse_clients(text):
    """'0-4,10' -> ([0, 1, 2, 3, 4, 10], 0); 'auto:N' -> ([], N)."""
    if text.startswith("auto:"):
        n = text[5:]
        if not n.isdigit() or int(n) < 1:
            raise ClientError("--clients '%s': expected auto:N with N >= 1" % text)
        return [], int(n)
    ids = set()
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


def log(name, text):
    sys.stderr.write("%s [%s] %s\n" % (time.strftime("%H:%M:%S"), name, text))
    sys.stderr.flush()


class Options:
    """The C++ daemon's flags, by the same names (see cli.add_flags)."""

    def __init__(self, coordinator, clients, name="", out=".", state_dir="", tls_ca="",
                 tls_cert="", tls_key="", tls_server_name="", token_file="", insecure=False,
                 device="cpu", heartbeat_s=30.0, initial_backoff_s=0.25, max_backoff_s=30.0,
                 capacity=0, threads=1, adversary=""):
        self.coordinator, self.clients = coordinator, clients
        self.name = name or "shefl-py-client-%d" % os.getpid()
        self.out, self.state_dir = out, state_dir or os.path.join(out, "state")
        self.tls_ca, self.tls_cert, self.tls_key = tls_ca, tls_cert, tls_key
        self.tls_server_name, self.token_file, self.insecure = tls_server_name, token_file, insecure
        self.device, self.heartbeat_s = device, heartbeat_s
        self.initial_backoff_s, self.max_backoff_s = initial_backoff_s, max_backoff_s
        self.capacity, self.threads = capacity, threads
        if adversary not in ("", "huge", "flip"):
            raise ClientError("--adversary '%s': the Python client lies as huge or flip" % adversary)
        self.adversary = adversary


class Client:
    """model: config dict -> torch.nn.Module with the coordinator's flat
    layout. train: (module, TrainContext) -> mean training loss. num_samples
    (optional): client id -> shard size, for data the client brings itself;
    without it the run's data set is loaded and partitioned as the C++
    daemons do, and TrainContext carries the shard."""

    def __init__(self, options, model, train, num_samples=None):
        self.o = options
        self.make_model, self.train_fn, self.num_samples_fn = model, train, num_samples
        self.clients, self.auto_clients = parse_clients(options.clients)
        self.token = _read_token(options.token_file)
        self.credentials = _channel_credentials(options)
        self.ledger = B.Ledger()
        self.stop = threading.Event()
        self.prepared = False
        self.modules = []  # one per worker: tasks train side by side
        # As the C++ daemon: --threads tasks at once, one torch thread each,
        # so results do not depend on how clients are packed into daemons.
        self.workers = max(1, int(options.threads))
        self.dataset, self.shards = None, {}
        self.device = torch.device(_resolve_device(options.device))
        os.makedirs(options.out, exist_ok=True)
        os.makedirs(options.state_dir, exist_ok=True)
        torch.set_num_threads(1)

    # ------------------------------------------------------------ running

    def run(self):
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

    def _one_session(self):
        options = [("grpc.keepalive_time_ms", 10000), ("grpc.keepalive_timeout_ms", 5000),
                   ("grpc.keepalive_permit_without_calls", 1),
                   ("grpc.http2.max_pings_without_data", 0)]
        if self.o.tls_server_name:
            options.append(("grpc.ssl_target_name_override", self.o.tls_server_name))
        if self.credentials is None:
            channel = grpc.insecure_channel(self.o.coordinator, options=options)
        else:
            channel = grpc.secure_channel(self.o.coordinator, self.credentials, options=options)
        with channel:
            return Session(self, channel).run()

    # ------------------------------------------------------ preparation

    def prepare(self, config_yaml, layout):
        """Once, at the first registration: the run's config, the user's
        module checked against the coordinator's layout, the shards, the
        compressor and the residuals this client left."""
        self.config_yaml = config_yaml
        self.config = yaml.safe_load(config_yaml) or {}
        model_name = self.config.get("model", {}).get("name", "?")
        _check_precision(self.config.get("train", {}).get("precision", "fp32"), self.device)
        theirs = [(t.name, list(t.shape), t.buffer) for t in layout]
        for _ in range(self.workers):
            module = self.make_model(self.config).to(self.device)
            try:
                flat.check_layout(module, theirs, "the coordinator's model '%s'" % model_name)
            except flat.ModelContractError as e:
                raise ClientError(str(e))
            self.modules.append(module)
        self.dim = flat.flat_size(self.modules[0])
        start = time.time()
        if self.num_samples_fn is None:
            self.dataset = load_training_set(self.config)
            labels = self.dataset.y.tolist()
            for c in self.clients:
                self.shards[c] = training_indices(self.config, labels, self.dataset.num_classes, c)
        comp = self.config.get("compression", {})
        self.compressor = DeltaCompressor(
            comp.get("value_type", "fp32"), bool(comp.get("error_feedback", False)),
            os.path.join(self.o.state_dir, "residuals"), fingerprint(config_yaml))
        if self.compressor.residuals is not None:
            n = self.compressor.residuals.load(self.clients)
            if n:
                log(self.o.name, "%d error-feedback residuals restored from %s/residuals"
                    % (n, self.o.state_dir))
        self.prepared = True
        log(self.o.name, "%d clients (%d..%d) ready on %s in %.1f s; model '%s', d = %d; "
            "%d tasks at once, 1 thread each" % (
                len(self.clients), self.clients[0], self.clients[-1], self.device,
                time.time() - start, model_name, self.dim, self.workers))

    def num_samples(self, client):
        if self.num_samples_fn is not None:
            return int(self.num_samples_fn(client))
        return len(self.shards.get(client, ()))

    def label_counts(self, client):
        if self.dataset is None:
            return []
        counts = [0] * self.dataset.num_classes
        for i in self.shards.get(client, ()):
            counts[int(self.dataset.y[i])] += 1
        return counts


def _cpu_has_bf16():
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and
                       ({"avx512_bf16", "amx_bf16"} & set(line.split()))
                       for line in f)
    except OSError:
        return False


def _check_precision(precision, device):
    """train.precision: bf16 on CUDA or a CPU with bf16 units, as the C++
    daemon checks it (common/learn/precision.h)."""
    if precision == "bf16" and device.type == "cpu" and not _cpu_has_bf16():
        raise ClientError("train.precision: bf16 needs a CUDA device or a CPU with AVX512_BF16 "
                          "or AMX (this cpu has neither; bf16 emulated there is slower than "
                          "fp32): use fp32")


def _read_token(path):
    if not path:
        return ""
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError as e:
        raise ClientError("--token-file '%s': %s" % (path, e.strerror))


def _read_file(flag, path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ClientError("%s '%s': %s" % (flag, path, e.strerror))


def _channel_credentials(o):
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


def _resolve_device(text):
    if text in ("", "auto"):
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if text.startswith("cuda") and not torch.cuda.is_available():
        raise ClientError("--device %s: this torch has no CUDA device" % text)
    if text != "cpu" and not text.startswith("cuda"):
        raise ClientError("--device '%s': expected cpu, cuda, cuda:N or auto" % text)
    return text
