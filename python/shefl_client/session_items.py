"""What a session's threads hand each other (client_session.py): the work
items of its queue, the shared model fetch, how a session ended, and names
for the generated protobuf types."""
from __future__ import annotations

import threading
from typing import Any, NamedTuple, Optional, Union

import grpc
import torch

# Generated protobuf messages and gRPC objects (shefl_client._proto is
# untyped): named for what they are, Any to the type checker.
Task = Any         # shefl_pb2.Task
ModelTask = Any    # shefl_pb2.ModelTask
Message = Any      # any shefl_pb2 message
StatusCode = Any   # grpc.StatusCode

# Codes that say nothing of what the coordinator did with a call (it may
# not have seen it): a residual staged for it is neither committed nor
# discarded (TaskUploader::Settles in C++).
TRANSIENT = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                       grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN,
                       grpc.StatusCode.INTERNAL, grpc.StatusCode.ABORTED})


class ModelWork(NamedTuple):
    """A work item: train one model of a task."""
    task: Task
    mt: ModelTask
    deadline: float


class RoundEnd(NamedTuple):
    """A work item: the coordinator ended this round."""
    round: int


WorkItem = Union[ModelWork, RoundEnd]


class Fetch:
    """One model transfer that serves several clients; the others wait.
    Thread-safe: one task fills it and sets `done`, the others wait on it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.weights: Optional[torch.Tensor] = None
        self.error: Optional[BaseException] = None

    def result(self) -> torch.Tensor:
        """The weights, once the fetching task is done; its error else."""
        self.done.wait()
        if self.error is not None:
            raise self.error
        assert self.weights is not None
        return self.weights


class SessionEnd:
    """How a session ended: what Client.run does next."""
    SHUTDOWN, LOST, UNREACHABLE = "shutdown", "lost", "unreachable"
