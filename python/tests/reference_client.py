#!/usr/bin/env python3
"""A Python client that trains exactly as the C++ daemon does (the run's
mlp, shefl_client.sgd_train): what the mixed-run test starts through
`shefl run --python-clients --python-script`. --bad-upload MODE makes it
send what the coordinator must refuse (the refusal tests)."""
import os
import sys

# Started by `shefl run` from a checkout: the package is beside this folder.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from shefl_client import Client, ClientError, cli, sgd_train  # noqa: E402
from shefl_client.models import Mlp  # noqa: E402


def make_model(config):
    data = config.get("data", {})
    if data.get("dataset") == "synthetic":
        return Mlp(int(data.get("synthetic_features", 20)), int(data.get("synthetic_classes", 4)))
    return Mlp()


def main(argv):
    try:
        Client(cli.parse(argv), model=make_model, train=sgd_train).run()
    except ClientError as e:
        sys.stderr.write("reference_client: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
