"""One connection to the coordinator (Session in client/daemon_session.cc):
register, hold the task feed, run the tasks one model at a time on a
worker thread, and write each round's line once the round has ended and
its work is done. Under aggregation.secure a trained delta goes to the
round's secure session (secure.secure_sessions) instead of an upload, and
the feed's secure stages go to it too. Thread-safety: the feed runs on the
caller's thread, heartbeats and the workers on their own; what they share
is under self.lock (the cache, expected clients, rounds in flight and ended)."""
from __future__ import annotations

import os
import queue
import threading
import time
from typing import Any, Optional

import grpc
import torch

from . import books as B
from . import flat
from ._proto import shefl_pb2 as pb
from ._proto import shefl_pb2_grpc as pb_grpc
from .client_state import ClientState
from .model_download import ModelDownloads
from .options import ClientError, log
from .secure.secure_sessions import Link
from .session_items import (TRANSIENT, Fetch, Message, ModelTask, ModelWork, RoundEnd,
                            SessionEnd, StatusCode, Task, WorkItem)
from .train import TrainContext

CHUNK_BYTES = 1 << 20


def _log(client: ClientState, text: str) -> None:
    log(client.o.name, text)


class Session(ModelDownloads):
    """One connection's life: registration, then the task feed until the
    coordinator ends the run or the connection goes."""

    def __init__(self, client: ClientState, channel: grpc.Channel) -> None:
        self.c = client
        self.stub = pb_grpc.CoordinatorStub(channel)
        self.metadata: tuple[tuple[str, str], ...] = (
            (("shefl-token", client.token),) if client.token else ())
        self.work: queue.Queue[Optional[WorkItem]] = queue.Queue()
        self.known_round = 0
        self.closed_round = 0
        self.last_heard = time.monotonic()
        self.last_task = 0.0
        self.over = threading.Event()
        # model -> (version, {client: Fetch}): the newest version only
        self.cache: dict[int, tuple[int, dict[int, Fetch]]] = {}
        # (model, version) -> clients whose tasks need it
        self.expected: dict[tuple[int, int], set[int]] = {}
        self.lock = threading.Lock()
        self.in_flight: dict[int, int] = {}  # round -> work items running
        self.ended: list[int] = []           # ended rounds whose lines are not written yet

    def book(self, rnd: int, client: int, up: bool, payload: bool, nbytes: int,
             model: int = B.NO_MODEL) -> None:
        self.c.ledger.book(rnd, client, up, payload, nbytes, model)

    def link(self) -> Link:
        """What a secure stage's call goes on: this connection."""
        return Link(self.stub, self.metadata, self.c.session_id)

    # ------------------------------------------------------------ session

    def run(self) -> str:
        c = self.c
        req = pb.RegisterRequest(daemon_name=c.o.name, token=c.token, device=str(c.device),
                                 want_model_layout=True)
        for cid in c.clients:
            req.clients.add(client_id=cid)
        if not c.clients:
            req.auto_clients = c.auto_clients
        try:
            reply = self.stub.Register(req, timeout=10)
        except grpc.RpcError as e:
            if e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                return SessionEnd.UNREACHABLE
            raise ClientError("registration refused: %s: %s"
                              % (e.code().name, e.details())) from None
        self.known_round = reply.current_round
        self.closed_round = max(0, self.known_round - 1)
        self.book(self.known_round, B.DAEMON, True, False, B.wire_size(req))
        self.book(self.known_round, B.DAEMON, False, False, B.wire_size(reply))
        c.session_id = reply.session_id
        if not c.clients:
            c.clients = list(reply.clients)
            _log(c, "the coordinator assigned clients %d..%d" % (c.clients[0], c.clients[-1]))
        _log(c, "registered with %s for run '%s'" % (c.o.coordinator, reply.run_name))
        if not c.prepared:
            c.prepare(reply.config_yaml.decode(), reply.model_layout)
        return self._feed()

    def _feed_request(self) -> Message:
        c = self.c
        req = pb.TaskFeedRequest(session_id=c.session_id)
        hasa = c.config.get("method") == "hasa"
        for cid in c.clients:
            lc = req.clients.add(client_id=cid, num_samples=c.num_samples(cid),
                                 capacity=c.o.capacity)
            if hasa:
                lc.label_counts.extend(c.label_counts(cid))
        return req

    def _book_feed_request(self, req: Message) -> None:
        daemon_bytes = B.wire_size(req)
        for lc in req.clients:
            b = B.label_count_bytes(lc)
            if b:
                daemon_bytes -= b
                self.book(self.known_round, lc.client_id, True, False, b)
        self.book(self.known_round, B.DAEMON, True, False, daemon_bytes)

    def _feed(self) -> str:
        if self.c.secure is not None:
            self.c.secure.new_session()
        req = self._feed_request()
        call = self.stub.TaskFeed(req, metadata=self.metadata)
        self._book_feed_request(req)
        workers = [threading.Thread(target=self._work_loop, args=(slot,), daemon=True)
                   for slot in range(self.c.workers)]
        beat = threading.Thread(target=self._heartbeat_loop, args=(call,), daemon=True)
        for w in workers:
            w.start()
        beat.start()
        shutdown = False
        try:
            for msg in call:
                self.last_heard = time.monotonic()
                kind = msg.WhichOneof("kind")
                self.book(B.feed_round(msg, self.known_round), B.feed_client(msg), False, False,
                          B.wire_size(msg), B.feed_model(msg))
                if kind == "task":
                    self.known_round = max(self.known_round, msg.task.round)
                    self._enqueue_task(msg.task)
                elif B.is_secure_stage(msg):
                    if self.c.secure is not None:
                        self.c.secure.on_feed(self.link(), msg)
                elif kind == "round_end":
                    if self.c.secure is not None:
                        self.c.secure.round_ended(msg.round_end.round)
                    self.closed_round = msg.round_end.round
                    self.work.put(RoundEnd(msg.round_end.round))
                elif kind == "shutdown":
                    _log(self.c, "coordinator ended the run (%s)" % msg.shutdown.reason)
                    shutdown = True
                    break
                if self.c.stop.is_set():
                    break
        except grpc.RpcError as e:
            if e.code() not in TRANSIENT:
                _log(self.c, "task feed ended: %s: %s" % (e.code().name, e.details()))
        if not shutdown:
            call.cancel()
        self.over.set()
        for _ in workers:
            self.work.put(None)
        for w in workers:
            w.join()
        beat.join()
        with self.lock:
            self._flush_round_lines()
        return SessionEnd.SHUTDOWN if shutdown or self.c.stop.is_set() else SessionEnd.LOST

    def _enqueue_task(self, task: Task) -> None:
        deadline = time.time() + task.deadline_in_ms / 1000.0
        with self.lock:
            for mt in task.models:
                self.expected.setdefault((mt.model_id, mt.model_version), set()).add(task.client_id)
        self.last_task = time.monotonic()
        for mt in task.models:
            self.work.put(ModelWork(task, mt, deadline))

    def _heartbeat_loop(self, call: Any) -> None:
        every = self.c.o.heartbeat_s
        if every <= 0:
            return
        while not self.over.wait(0.2):
            if time.monotonic() - self.last_heard < every:
                continue
            req = pb.HeartbeatRequest(session_id=self.c.session_id)
            try:
                reply = self.stub.Heartbeat(req, metadata=self.metadata, timeout=10)
                self.book(reply.round, B.DAEMON, True, False, B.wire_size(req))
                self.book(reply.round, B.DAEMON, False, False, B.wire_size(reply))
            except grpc.RpcError as e:
                if e.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                    _log(self.c, "heartbeat refused (%s): registering again" % e.details())
                    call.cancel()
            self.last_heard = time.monotonic()

    # --------------------------------------------------------------- work

    def _work_loop(self, slot: int) -> None:
        while True:
            item = self.work.get()
            if item is None:
                break
            with self.lock:
                if isinstance(item, RoundEnd):
                    self.ended.append(item.round)
                    self._flush_round_lines()
                    continue
                if self.over.is_set():
                    continue
                task, mt, deadline = item
                self.in_flight[task.round] = self.in_flight.get(task.round, 0) + 1
            try:
                self._run_model(task, mt, deadline, self.c.modules[slot])
            except Exception as e:  # one task's failure never ends the daemon
                _log(self.c, "client %d model %d: %s" % (task.client_id, mt.model_id, e))
                self._secure_failed(task, mt)
            with self.lock:
                self.in_flight[task.round] -= 1
                if not self.in_flight[task.round]:
                    del self.in_flight[task.round]
                self._flush_round_lines()

    def _flush_round_lines(self) -> None:
        """Writes the lines of ended rounds whose work is all done, in order.
        Caller holds self.lock."""
        while self.ended and not any(n for r, n in self.in_flight.items()
                                     if r <= self.ended[0]):
            rnd = self.ended.pop(0)
            line = self.c.ledger.round_line(rnd, self.c.o.name)
            B.append_line(os.path.join(self.c.o.out, self.c.o.name + ".jsonl"), line)

    def _await_task_burst(self) -> None:
        # A round's tasks come in one burst; a fetch waits for its end so
        # that it covers every client of this daemon that needs the version.
        start = time.monotonic()
        while time.monotonic() - self.last_task < 0.03 and time.monotonic() - start < 1.0:
            time.sleep(0.005)

    def _run_model(self, task: Task, mt: ModelTask, deadline: float,
                   module: torch.nn.Module) -> None:
        c = self.c
        if task.round <= self.closed_round:
            _log(c, "client %d model %d: skipped: round %d is over"
                 % (task.client_id, mt.model_id, task.round))
            self._secure_failed(task, mt)
            return
        self._await_task_burst()
        t0 = time.monotonic()
        global_flat = self._weights(task, mt, deadline).to(c.device)
        t1 = time.monotonic()
        flat.load_flat(module, global_flat)
        c.ledger.add_phase(task.round, "download", t1 - t0)
        c.ledger.add_phase(task.round, "load", time.monotonic() - t1)
        ctx = TrainContext.for_task(task, mt.model_id, c.config, c.device, c.dataset,
                                    c.shards.get(task.client_id), global_flat)
        start = time.monotonic()
        loss = float(c.train_fn(module, ctx))
        t2 = time.monotonic()
        c.ledger.add_phase(task.round, "train", t2 - start)
        c.ledger.add_training(task.round, t2 - start,
                              ctx.samples_trained() if c.num_samples_fn is None else
                              (ctx.local_steps * ctx.batch_size if ctx.local_steps > 0 else
                               c.num_samples(task.client_id) * max(1, ctx.local_epochs)))
        delta = flat.flatten(module) - global_flat
        if c.o.adversary == "huge":  # as shefl-client --adversary (client/adversary.h)
            delta.zero_()
            delta[0] = 1e38
        elif c.o.adversary == "flip":
            delta.mul_(-100.0)
        if c.secure is not None:
            # The whole delta goes to the round's secure session, which
            # applies the residual itself; there is no upload.
            c.secure.contribute(self.link(), task.round, mt.model_id, task.client_id,
                                delta.detach().to("cpu", torch.float32).contiguous().numpy())
            c.ledger.add_phase(task.round, "secure", time.monotonic() - t2)
            _log(c, "round %d client %d model %d: given to the secure session, loss %.4f" % (
                task.round, task.client_id, mt.model_id, loss))
            return
        encoded, nnz = c.compressor.compress(task.client_id, mt.model_id, task.round, delta, mt.k)
        t3 = time.monotonic()
        c.ledger.add_phase(task.round, "compress", t3 - t2)
        code = self._upload(task, mt, encoded, loss, deadline)
        c.ledger.add_phase(task.round, "upload", time.monotonic() - t3)
        if code not in TRANSIENT:
            c.compressor.settle(task.client_id, mt.model_id, task.round, code is None)
        _log(c, "round %d client %d model %d: %s, loss %.4f, %d of %d sent" % (
            task.round, task.client_id, mt.model_id,
            "sent" if code is None else "upload refused (%s)" % code.name, loss, nnz, c.dim))

    def _secure_failed(self, task: Task, mt: ModelTask) -> None:
        """Under aggregation.secure: this client adds nothing to the round's
        session, which then stops waiting for it."""
        if self.c.secure is not None:
            self.c.secure.contribute(self.link(), task.round, mt.model_id, task.client_id, None)

    def _upload(self, task: Task, mt: ModelTask, encoded: bytes, loss: float,
                deadline: float) -> Optional[StatusCode]:
        """None when accepted, else the refusal's status code."""
        c = self.c
        header = pb.UploadHeader(session_id=c.session_id, round=task.round,
                                 client_id=task.client_id, model_id=mt.model_id,
                                 model_version=mt.model_version, encoded_size=len(encoded),
                                 num_samples=c.num_samples(task.client_id), train_loss=loss)
        chunks = []
        off = 0
        while True:
            chunk = pb.DeltaChunk(data=encoded[off:off + CHUNK_BYTES])
            if off == 0:
                chunk.header.CopyFrom(header)
            chunks.append(chunk)
            off += CHUNK_BYTES
            if off >= len(encoded):
                break
        try:
            reply = self.stub.UploadDelta(iter(chunks), metadata=self.metadata,
                                          timeout=max(0.001, deadline - time.time()))
        except grpc.RpcError as e:
            _log(c, "client %d model %d: upload refused: %s" % (task.client_id, mt.model_id,
                                                                e.details()))
            return e.code()
        self.book(task.round, task.client_id, True, True, sum(B.wire_size(ch) for ch in chunks),
                  mt.model_id)
        self.book(task.round, task.client_id, False, False, B.wire_size(reply), mt.model_id)
        if not reply.accepted:
            _log(c, "client %d model %d: upload refused: %s" % (task.client_id, mt.model_id,
                                                                reply.reason))
            return grpc.StatusCode.FAILED_PRECONDITION
        return None
