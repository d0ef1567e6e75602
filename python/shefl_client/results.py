"""A run folder (what `shefl run` or shefl-coordinator --out writes) as plain
Python objects, for notebooks:

    from shefl_client.results import load_run
    run = load_run("results/quick-20261125-0701")
    run.summary["final_accuracy"], len(run.rounds), run.daemons.keys()
    run.rounds_frame()          # a pandas DataFrame, when pandas is there

rounds.jsonl's lines are read whole only: a line the coordinator is still
writing is left out, so a running run can be read too.
"""
from __future__ import annotations

import json
import os
from typing import Any, Optional


class RunFolderError(ValueError):
    """The folder is not a run folder, or a file in it is not what it should be."""


def _jsonl(path: str) -> list[Any]:
    """The complete lines of a JSONL file, parsed; [] when it is absent."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    complete = text[: text.rfind("\n") + 1]
    out: list[Any] = []
    for n, line in enumerate(complete.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise RunFolderError("%s:%d: not JSON (%s)" % (path, n, e.msg)) from None
    return out


class Run:
    """One run folder: its resolved config, round lines, summary (None
    while the run goes on) and each daemon's own books."""

    def __init__(self, path: str, config: dict[str, Any], rounds: list[dict[str, Any]],
                 summary: Optional[dict[str, Any]],
                 daemons: dict[str, list[dict[str, Any]]]) -> None:
        self.path = path
        self.config = config
        self.rounds = rounds
        self.summary = summary
        self.daemons = daemons

    @property
    def finished(self) -> bool:
        return self.summary is not None and self.summary.get("rounds") == self.config.get("rounds")

    def rounds_frame(self) -> Any:
        """rounds.jsonl as a pandas DataFrame, one row per round; nested
        fields (bytes by client, per-model accuracy) stay as objects."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("rounds_frame needs pandas (Debian: python3-pandas); "
                              "run.rounds is the same data as a list of dicts") from None
        return pd.DataFrame(self.rounds)

    def __repr__(self) -> str:
        return "Run(%r, %d rounds%s)" % (self.path, len(self.rounds),
                                         ", finished" if self.finished else "")


def _config(path: str) -> dict[str, Any]:
    name = os.path.join(path, "config.yaml")
    if not os.path.exists(name):
        return {}
    try:
        import yaml
    except ImportError:
        raise ImportError("reading config.yaml needs PyYAML (Debian: python3-yaml)") from None
    with open(name, encoding="utf-8") as f:
        return yaml.safe_load(f) or {}


def load_run(path: str) -> Run:
    """The run folder at path. RunFolderError when it holds no run."""
    if not os.path.isdir(path):
        raise RunFolderError("%s: no such folder" % path)
    if not any(os.path.exists(os.path.join(path, f))
               for f in ("rounds.jsonl", "summary.json", "config.yaml")):
        raise RunFolderError("%s: not a run folder (no rounds.jsonl, summary.json or config.yaml)"
                             % path)
    summary = None
    summary_path = os.path.join(path, "summary.json")
    if os.path.exists(summary_path):
        with open(summary_path, encoding="utf-8") as f:
            try:
                summary = json.load(f)
            except json.JSONDecodeError as e:
                raise RunFolderError("%s: not JSON (%s)" % (summary_path, e.msg)) from None
    daemons: dict[str, list[dict[str, Any]]] = {}
    daemon_dir = os.path.join(path, "daemons")
    if os.path.isdir(daemon_dir):
        for name in sorted(os.listdir(daemon_dir)):
            if name.endswith(".jsonl"):
                daemons[name[: -len(".jsonl")]] = _jsonl(os.path.join(daemon_dir, name))
    return Run(path, _config(path), _jsonl(os.path.join(path, "rounds.jsonl")), summary, daemons)
