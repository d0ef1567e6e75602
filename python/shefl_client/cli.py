"""The C++ daemon's flags for a Python client program, so that `shefl run
--python-clients` (and a user by hand) starts one like shefl-client."""
from __future__ import annotations

import argparse
from typing import Optional, Sequence

from .options import Options


def add_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The C++ daemon's flags, added to `parser`; returns it."""
    a = parser.add_argument
    a("--coordinator", required=True, help="HOST:PORT of shefl-coordinator")
    a("--clients", required=True, help="logical client ids (0-4,10) or auto:N")
    a("--name", default="", help="daemon name (default shefl-py-client-<pid>)")
    a("--out", default=".", help="folder for <name>.jsonl (the byte books)")
    a("--state-dir", default="", help="error-feedback residuals (default <out>/state)")
    a("--device", default="cpu", help="cpu, cuda, cuda:N or auto")
    a("--tls-ca", default="", help="CA the coordinator's certificate chains to")
    a("--tls-cert", default="", help="own certificate (mutual TLS)")
    a("--tls-key", default="", help="its private key")
    a("--tls-server-name", default="", help="name to check instead of the host")
    a("--token-file", default="", help="the registration token, one line")
    a("--insecure", action="store_true", help="plaintext, no checks")
    a("--heartbeat-s", type=float, default=30.0, help="heartbeat after this long in silence")
    a("--max-backoff-s", type=float, default=30.0, help="longest reconnect delay")
    a("--capacity", type=int, default=0, help="most models a client trains a round (0: none)")
    a("--threads", type=int, default=1, help="tasks at once, one torch thread each")
    a("--adversary", default="", help="lie for robustness experiments: huge or flip")
    a("--dp-min-multiplier", type=float, default=0.0,
      help="distributed DP: send no secure input whose session's noise is below this "
           "times what one client can move its sum (0: none)")
    return parser


def options_from(args: argparse.Namespace) -> Options:
    return Options(coordinator=args.coordinator, clients=args.clients, name=args.name,
                   out=args.out, state_dir=args.state_dir, tls_ca=args.tls_ca,
                   tls_cert=args.tls_cert, tls_key=args.tls_key,
                   tls_server_name=args.tls_server_name, token_file=args.token_file,
                   insecure=args.insecure, device=args.device, heartbeat_s=args.heartbeat_s,
                   max_backoff_s=args.max_backoff_s, capacity=args.capacity,
                   threads=args.threads, adversary=args.adversary,
                   dp_min_multiplier=args.dp_min_multiplier)


def parse(argv: Optional[Sequence[str]],
          description: str = "A shefl Python client") -> Options:
    """Options from the command line (argparse exits with a usage line on
    a bad flag)."""
    return options_from(add_flags(argparse.ArgumentParser(description=description)).parse_args(argv))
