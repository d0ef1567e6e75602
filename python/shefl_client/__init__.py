"""shefl's Python client: bring your own torch.nn.Module and training loop
into a shefl federation, beside the C++ daemons.

    from shefl_client import Client, cli
    opts = cli.parse(sys.argv[1:])          # the C++ daemon's flags
    Client(opts, model=make_model, train=my_train).run()

Modules: client (the daemon protocol; client_state, client_session and
model_download its parts, options what they share), train (TrainContext, the C++ batch
order, sgd_train), models (the C++ `cnn` and `mlp` in PyTorch), flat (the
flat fp32 layout), codec (the wire codec, byte for byte the C++ one),
compress (top-k, error feedback), partition and data (the shards the C++
daemons compute), books (byte accounting), results (a run folder as
Python objects), secure (the subpackage of secure aggregation: its
primitives, party and a client's sessions, byte for byte common/secure/
and client/secure_sessions.h), _proto (the gRPC modules generated from
proto/).

The names below are imported when first used, so that `results` (for a
notebook) and `models` (for a benchmark) need neither gRPC nor PyYAML."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .client import Client
    from .options import ClientError, Options
    from .train import TrainContext, sgd_train

_HOMES = {"Client": ".client", "ClientError": ".options", "Options": ".options",
          "TrainContext": ".train", "sgd_train": ".train"}

__all__ = ["Client", "ClientError", "Options", "TrainContext", "sgd_train"]


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError("module 'shefl_client' has no attribute '%s'" % name)
    return getattr(importlib.import_module(home, __name__), name)
