"""Shared memory and signals between the inference server and its client processes.

Everything is allocated once, in the suite's main process, before any process starts:

- a request area with one slot per client, sized for `leaves` positions of input planes,
  plus the slot's position count and the time it was sent;
- a reply area with one slot per client (7 priors and a value per position);
- one pipe into the server carrying 4-byte slot indices (a write of 4 bytes to a pipe is
  atomic, so clients share it without a lock, and the server drains many requests with
  one read); negative codes are control messages from the main process;
- one semaphore per client that the server releases when its reply is written.

No tensor is ever pickled per request: a request costs a copy into shared memory, one
4-byte write and one semaphore wait. numpy only: client processes import this module.
"""

from __future__ import annotations

import os
import struct
import time
from typing import Any

import numpy as np

from suites.selfplay.connect4 import COLUMNS, PLANES, ROWS

REPLY_WIDTH = COLUMNS + 1  # priors, then the value
STOP = -1  # main -> server: answer what is pending, send the stats, exit
MEASURE = -2  # main -> server: warm-up is over, start (or restart) recording
HOLD = -3  # main -> server: the measured window is over, stop recording (shutdown is not measured)


def left_code(slot: int) -> int:
    """client -> server: this client sends no more requests."""
    return -4 - slot


def slot_of_left_code(code: int) -> int:
    return -4 - code


class Channel:
    """Pass it to the server and to the clients as a Process argument (it holds fds and
    shared arrays that only travel while a process is being started)."""

    def __init__(self, ctx: Any, clients: int, leaves: int):
        self.clients = clients
        self.leaves = leaves
        self._requests = ctx.RawArray("f", clients * leaves * PLANES * ROWS * COLUMNS)
        self._replies = ctx.RawArray("f", clients * leaves * REPLY_WIDTH)
        self._counts = ctx.RawArray("i", clients)
        self._sent_at = ctx.RawArray("d", clients)
        self.reader, self.writer = ctx.Pipe(duplex=False)
        self.replied = [ctx.Semaphore(0) for _ in range(clients)]
        self._views: dict[str, np.ndarray] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_views"] = None
        return state

    def views(self) -> dict[str, np.ndarray]:
        if self._views is None:
            self._views = {
                "requests": np.frombuffer(self._requests, dtype=np.float32).reshape(
                    self.clients, self.leaves, PLANES, ROWS, COLUMNS
                ),
                "replies": np.frombuffer(self._replies, dtype=np.float32).reshape(
                    self.clients, self.leaves, REPLY_WIDTH
                ),
                "counts": np.frombuffer(self._counts, dtype=np.int32),
                "sent_at": np.frombuffer(self._sent_at, dtype=np.float64),
            }
        return self._views

    def signal(self, code: int) -> None:
        os.write(self.writer.fileno(), struct.pack("<i", code))

    def client(self, slot: int) -> InferenceServerClient:
        return InferenceServerClient(self, slot)


class InferenceServerClient:
    """An evaluator that asks the inference server. Built in the main process and passed
    to its worker as a Process argument: it carries only its own slot's semaphore."""

    def __init__(self, channel: Channel, slot: int):
        if not 0 <= slot < channel.clients:
            raise ValueError(f"slot {slot} out of range 0..{channel.clients - 1}")
        self.slot = slot
        self.capacity = channel.leaves
        self._channel_shape = (channel.clients, channel.leaves)
        self._raw = (channel._requests, channel._replies, channel._counts, channel._sent_at)
        self._writer = channel.writer
        self._replied = channel.replied[slot]
        self._views: tuple[np.ndarray, ...] | None = None
        self._pending = 0
        self.waited_s = 0.0  # seconds blocked in collect()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_views"] = None
        return state

    def _bind(self) -> tuple[np.ndarray, ...]:
        clients, leaves = self._channel_shape
        requests, replies, counts, sent_at = self._raw
        self._views = (
            np.frombuffer(requests, dtype=np.float32).reshape(clients, leaves, PLANES, ROWS, COLUMNS)[self.slot],
            np.frombuffer(replies, dtype=np.float32).reshape(clients, leaves, REPLY_WIDTH)[self.slot],
            np.frombuffer(counts, dtype=np.int32),
            np.frombuffer(sent_at, dtype=np.float64),
        )
        return self._views

    def evaluate(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = planes.shape[0]
        if n > self.capacity:  # never from MCTS (a step has at most `leaves` leaves)
            parts = [self.evaluate(planes[i : i + self.capacity]) for i in range(0, n, self.capacity)]
            return np.concatenate([p for p, _ in parts]), np.concatenate([v for _, v in parts])
        self.submit(planes)
        return self.collect()

    def submit(self, planes: np.ndarray) -> None:
        """Send at most `capacity` positions; the reply waits until `collect`."""
        request, _, counts, sent_at = self._views or self._bind()
        n = planes.shape[0]
        request[:n] = planes
        counts[self.slot] = n
        self._pending = n
        sent_at[self.slot] = time.monotonic()
        os.write(self._writer.fileno(), struct.pack("<i", self.slot))

    def collect(self) -> tuple[np.ndarray, np.ndarray]:
        """Wait for the reply to the last `submit`: (priors, values). The time spent blocked
        adds to `waited_s` (the worker's share of time waiting for the server)."""
        _, reply, _, _ = self._views or self._bind()
        if not self._replied.acquire(False):
            started = time.perf_counter()
            self._replied.acquire()
            self.waited_s += time.perf_counter() - started
        out = reply[: self._pending]
        return out[:, :COLUMNS].copy(), out[:, COLUMNS].copy()

    def close(self) -> None:
        """Tell the server this client is done (it stops waiting for it before firing)."""
        os.write(self._writer.fileno(), struct.pack("<i", left_code(self.slot)))
