"""shefl's Python client: bring your own torch.nn.Module and training loop
into a shefl federation, beside the C++ daemons.

    from shefl_client import Client, cli
    opts = cli.parse(sys.argv[1:])          # the C++ daemon's flags
    Client(opts, model=make_model, train=my_train).run()

Modules: client (the daemon protocol), train (TrainContext, the C++ batch
order, sgd_train), flat (the flat fp32 layout), codec (the wire codec,
byte for byte the C++ one), compress (top-k, error feedback), partition
and data (the shards the C++ daemons compute), books (byte accounting),
results (a run folder as Python objects)."""
import os
import sys

# The gRPC modules generated from proto/shefl.proto: installed beside this
# package (pip install), or in a build tree's build/python.
_HERE = os.path.dirname(os.path.abspath(__file__))
for _candidate in (os.path.join(_HERE, "_proto"),
                   os.path.join(os.path.dirname(os.path.dirname(_HERE)), "build", "python")):
    if os.path.exists(os.path.join(_candidate, "shefl_pb2.py")):
        if _candidate not in sys.path:
            sys.path.append(_candidate)
        break

from .client import Client, ClientError, Options  # noqa: E402
from .train import TrainContext, sgd_train  # noqa: E402

__all__ = ["Client", "ClientError", "Options", "TrainContext", "sgd_train"]
