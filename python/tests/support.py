"""What the Python client's tests share: where the built binaries are, a
small synthetic experiment (the C++ tests' SyntheticConfig, smaller), and a
free port on 127.0.0.1."""
import os
import socket

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("SHEFL_BIN_DIR", os.path.join(ROOT, "build", "bin"))


def synthetic_config(name, rounds, per_round_lpc=2, partition="", train_extra="", extra=""):
    """YAML of a small synthetic run: 6 clients (2 HPC), 3 mlp members.
    `partition` and `extra` are whole YAML lines; `train_extra` lines go
    under train:, `extra` last (under compression: when indented)."""
    return """name: %s
method: shefl
seed: 7
rounds: %d
data:
  dataset: synthetic
  synthetic_train: 600
  synthetic_test: 200
  synthetic_features: 16
  synthetic_classes: 4
%smodel:
  name: mlp
  num_models: 3
clients:
  num_clients: 6
  num_hpc: 2
  per_round_hpc: 1
  per_round_lpc: %d
train:
  lr: 0.05
%s  local_epochs: 1
  batch_size: 32
compression:
  density: 0.1
%s""" % (name, rounds, partition, per_round_lpc, train_extra, extra)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
