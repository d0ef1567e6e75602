"""A task's model version (ModelDownloader and ModelCache in
client/model_download.h and client/model_cache.h): fetched once for every
client of this daemon whose task needs it (also_for_clients), the chunks
held to the model's size, each client's share of the bytes booked as if it
had fetched alone. A mixin of Session (client_session.py), whose lock,
cache, expected clients, stub and ledger it uses; thread-safety as
Session's: the cache and the expected clients are under self.lock."""
from __future__ import annotations

import threading
import time
from typing import Optional

import numpy as np
import torch

from . import books as B
from ._proto import shefl_pb2 as pb
from ._proto import shefl_pb2_grpc as pb_grpc
from .client_state import ClientState
from .session_items import Fetch, ModelTask, Task


class ModelDownloads:
    """What the mixin needs of its Session."""
    c: ClientState
    stub: pb_grpc.CoordinatorStub
    metadata: tuple[tuple[str, str], ...]
    lock: threading.Lock
    # model -> (version, {client: Fetch}): the newest version only
    cache: dict[int, tuple[int, dict[int, Fetch]]]
    # (model, version) -> clients whose tasks need it
    expected: dict[tuple[int, int], set[int]]

    def book(self, rnd: int, client: int, up: bool, payload: bool, nbytes: int,
             model: int = B.NO_MODEL) -> None:
        raise NotImplementedError

    def _weights(self, task: Task, mt: ModelTask, deadline: float) -> torch.Tensor:
        """The model version's weights: those of the fetch that covered this
        client (waiting for it if under way), else a new fetch that covers
        it and every expected client no fetch covered yet
        (also_for_clients). Only the newest version of a model is kept; a
        task for an older one is fetched alone."""
        fetch, also, covered = self._claim(task.client_id, mt)
        if also is None:  # another task's fetch covers this client
            return fetch.result()
        try:
            weights = self._download(task, mt, also, deadline)
            fetch.weights = weights
        except Exception as e:
            fetch.error = e
            with self.lock:  # not kept: whoever needs it next fetches again
                for c in [task.client_id] + also:
                    if covered.get(c) is fetch:
                        del covered[c]
            raise
        finally:
            fetch.done.set()
        return weights

    def _claim(self, client: int,
               mt: ModelTask) -> tuple[Fetch, Optional[list[int]], dict[int, Fetch]]:
        """The fetch covering `client` for mt's version, the clients it
        covers besides (None: the fetch is another task's, to wait for),
        and the table it is in."""
        key = (mt.model_id, mt.model_version)
        with self.lock:
            version, covered = self.cache.get(mt.model_id, (-1, {}))
            if version < mt.model_version:
                version, covered = mt.model_version, {}
                self.cache[mt.model_id] = (version, covered)
            if version != mt.model_version:
                covered = {}  # stale: not kept
            fetch = covered.get(client)
            if fetch is not None:
                return fetch, None, covered
            fetch = covered[client] = Fetch()
            also = sorted(c for c in self.expected.get(key, ()) if c not in covered)
            for c in also:
                covered[c] = fetch
            return fetch, also, covered

    def _download(self, task: Task, mt: ModelTask, also: list[int],
                  deadline: float) -> torch.Tensor:
        c = self.c
        req = pb.DownloadRequest(session_id=c.session_id, round=task.round,
                                 client_id=task.client_id, model_id=mt.model_id,
                                 model_version=mt.model_version)
        alone = pb.DownloadRequest()
        alone.CopyFrom(req)
        req.also_for_clients.extend(also)
        parts, down, ok = [], 0, True
        got = 0
        for chunk in self.stub.DownloadModel(req, metadata=self.metadata,
                                             timeout=max(0.001, deadline - time.time())):
            down += B.wire_size(chunk)
            n = len(chunk.data) // 4
            # The offsets and total are claims: never grow past this model.
            if (not ok or chunk.offset != got or len(chunk.data) % 4 or chunk.total != c.dim
                    or got + n > c.dim):
                ok = False
                continue
            parts.append(chunk.data)
            got += n
        logical_up = 0
        for cid in [task.client_id] + list(also):
            alone.client_id = cid
            self.book(task.round, cid, True, False, B.wire_size(alone), mt.model_id)
            self.book(task.round, cid, False, True, down, mt.model_id)
            logical_up += B.wire_size(alone)
        c.ledger.add_download(task.round, logical_up, down * (len(also) + 1),
                              B.wire_size(req), down)
        if not ok or got != c.dim:
            raise RuntimeError("model %d: got %d of %d weights" % (mt.model_id, got, c.dim))
        return torch.from_numpy(np.frombuffer(b"".join(parts), dtype="<f4").copy())
