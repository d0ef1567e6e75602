"""What a Python client daemon holds across its sessions (client/daemon.h's
state): the options, the token, its clients, the user's module per worker,
the shards, the compressor, the byte books and, under aggregation.secure,
its secure-aggregation parties; and the preparation done
once, at the first registration. Client (client.py) adds the connection
loop; Session (client_session.py) reads and fills this state."""
from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable, Optional

import torch
import yaml

from . import books as B
from . import flat
from . import precision as P
from .compress import DeltaCompressor, fingerprint
from .data import Dataset, load_training_set
from .options import ClientError, Options, log, parse_clients
from .partition import training_indices
from .secure.secure_sessions import SecureSessions
from .train import TrainContext

Config = dict[str, Any]
# The user's side: model(config) -> module; train(module, ctx) -> mean loss;
# num_samples(client id) -> shard size, for data the user brings.
ModelFn = Callable[[Config], torch.nn.Module]
TrainFn = Callable[[torch.nn.Module, TrainContext], float]
NumSamplesFn = Callable[[int], int]


class ClientState:
    """One daemon's state. Thread-safety: set up by one thread (prepare,
    at the first registration), then read by the workers; the ledger and
    the compressor guard what they change themselves."""

    def __init__(self, options: Options, model: ModelFn, train: TrainFn,
                 num_samples: Optional[NumSamplesFn] = None) -> None:
        self.o = options
        self.make_model, self.train_fn, self.num_samples_fn = model, train, num_samples
        self.clients, self.auto_clients = parse_clients(options.clients)
        self.token = _read_token(options.token_file)
        self.ledger = B.Ledger()
        self.stop = threading.Event()
        self.prepared = False
        self.session_id = ""
        self.modules: list[torch.nn.Module] = []  # one per worker: tasks train side by side
        # As the C++ daemon: --threads tasks at once, one torch thread each,
        # so results do not depend on how clients are packed into daemons.
        self.workers = max(1, int(options.threads))
        self.dataset: Optional[Dataset] = None
        self.shards: dict[int, list[int]] = {}
        self.config_yaml = ""
        self.config: Config = {}
        self.dim = 0
        self.compressor: DeltaCompressor  # set by prepare
        # aggregation.secure: this daemon's parties (set by prepare); or None.
        self.secure: Optional[SecureSessions] = None
        self.device = torch.device(_resolve_device(options.device))
        os.makedirs(options.out, exist_ok=True)
        os.makedirs(options.state_dir, exist_ok=True)
        torch.set_num_threads(1)

    def prepare(self, config_yaml: str, layout: Any) -> None:
        """Once, at the first registration: the run's config, the user's
        module checked against the coordinator's layout (TensorInfo
        messages), the shards, the compressor and the residuals this
        client left."""
        self.config_yaml = config_yaml
        self.config = yaml.safe_load(config_yaml) or {}
        model_name = self.config.get("model", {}).get("name", "?")
        _check_precision(self.config.get("train", {}).get("precision", "fp32"), self.device)
        theirs = [(str(t.name), [int(s) for s in t.shape], bool(t.buffer)) for t in layout]
        for _ in range(self.workers):
            module = self.make_model(self.config).to(self.device)
            try:
                flat.check_layout(module, theirs, "the coordinator's model '%s'" % model_name)
            except flat.ModelContractError as e:
                raise ClientError(str(e)) from None
            self.modules.append(module)
        self.dim = flat.flat_size(self.modules[0])
        start = time.time()
        if self.num_samples_fn is None:
            self.dataset = load_training_set(self.config)
            labels = [int(y) for y in self.dataset.y.tolist()]
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
        mode = str((self.config.get("aggregation") or {}).get("secure", "off"))
        if mode != "off":
            self.secure = SecureSessions(self.o.name, self.ledger, self.compressor.residuals,
                                         self.dim, int(self.config.get("seed", 0)),
                                         masked=mode == "common_support",
                                         dp_min_multiplier=self.o.dp_min_multiplier)
        self.prepared = True
        log(self.o.name, "%d clients (%d..%d) ready on %s in %.1f s; model '%s', d = %d; "
            "%d tasks at once, 1 thread each" % (
                len(self.clients), self.clients[0], self.clients[-1], self.device,
                time.time() - start, model_name, self.dim, self.workers))

    def num_samples(self, client: int) -> int:
        if self.num_samples_fn is not None:
            return int(self.num_samples_fn(client))
        return len(self.shards.get(client, ()))

    def label_counts(self, client: int) -> list[int]:
        if self.dataset is None:
            return []
        counts = [0] * self.dataset.num_classes
        for i in self.shards.get(client, ()):
            counts[int(self.dataset.y[i])] += 1
        return counts


def _check_precision(precision: str, device: torch.device) -> None:
    """train.precision: bf16 on CUDA or a CPU with bf16 units, as the C++
    daemon checks it (common/learn/precision.h); auto always passes."""
    if precision == "bf16" and device.type == "cpu" and not P.cpu_has_bf16():
        raise ClientError("train.precision: bf16 needs a CUDA device or a CPU with AVX512_BF16 "
                          "or AMX (this cpu has neither; bf16 emulated there is slower than "
                          "fp32): use fp32")


def _read_token(path: str) -> str:
    if not path:
        return ""
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError as e:
        raise ClientError("--token-file '%s': %s" % (path, e.strerror)) from None


def _resolve_device(text: str) -> str:
    if text in ("", "auto"):
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if text.startswith("cuda") and not torch.cuda.is_available():
        raise ClientError("--device %s: this torch has no CUDA device" % text)
    if text != "cpu" and not text.startswith("cuda"):
        raise ClientError("--device '%s': expected cpu, cuda, cuda:N or auto" % text)
    return text
