"""The inference server: one process owns the net and batches every client's requests.

A batch fires when the waiting requests hold `max_batch` positions, when `timeout_ms` has
passed since the oldest waiting request was sent, or when every client that is still
playing is waiting (no further request can arrive, so waiting longer is pure loss).
Requests are never split: a batch takes waiting requests in arrival order while they fit
in `max_batch` (always at least one).

It records the size (positions) of every batch and the wait of every request (sent ->
reply written, i.e. queueing plus the forward pass), from the MEASURE signal on, and sends
them to the suite's main process when told to STOP. Runs in a forked process on CPU with
one torch thread, in a spawned one otherwise (CUDA cannot live in a forked child, and
libgomp hangs in a forked child that uses more than one thread).
"""

from __future__ import annotations

import os
import select
import time
import traceback
from array import array
from collections import deque
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from suites.selfplay.channel import HOLD, MEASURE, STOP, Channel, slot_of_left_code
from suites.selfplay.connect4 import COLUMNS
from suites.selfplay.launch import light_main
from suites.selfplay.net import NetConfig


def serve(
    channel: Channel,
    net_config: NetConfig,
    state_dict: dict,
    device: str,
    max_batch: int,
    timeout_ms: float,
    report: Connection,
    torch_threads: int = 1,
) -> None:
    """Process target: build the net, say `ready`, serve until STOP, send `stats`."""
    try:
        import torch

        if torch_threads:
            torch.set_num_threads(torch_threads)

        from suites.selfplay.local import LocalEvaluator

        evaluator = LocalEvaluator.build(net_config, torch.device(device), state_dict=state_dict)
        evaluator.evaluate(np.zeros((1, *channel.views()["requests"].shape[2:]), dtype=np.float32))
        report.send(("ready", {"device": evaluator.net_device, "pid": os.getpid()}))
        stats = _Server(channel, evaluator, max_batch, timeout_ms).run()
        report.send(("stats", stats))
    except BaseException:
        report.send(("error", traceback.format_exc()))
        raise


class _Server:
    def __init__(self, channel: Channel, evaluator: Any, max_batch: int, timeout_ms: float):
        self.evaluator = evaluator
        self.max_batch = max_batch
        self.timeout_s = timeout_ms / 1000.0
        views = channel.views()
        self.requests = views["requests"]
        self.replies = views["replies"]
        self.counts = views["counts"]
        self.sent_at = views["sent_at"]
        self.replied = channel.replied
        self.fd = channel.reader.fileno()
        self.pending: deque[int] = deque()
        self.pending_positions = 0
        self.active: set[int] = set()  # clients seen and not yet left
        self.recording = False
        self.batch_sizes = array("i")
        self.waits_ms = array("f")
        self.batches_total = 0
        self.positions_total = 0

    def run(self) -> dict[str, Any]:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        stopping = False
        while True:
            if self.pending:
                timeout = self.sent_at[self.pending[0]] + self.timeout_s - time.monotonic()
                events = poller.poll(max(0.0, timeout) * 1000.0) if timeout > 0 else poller.poll(0)
            else:
                if stopping:
                    break
                events = poller.poll(None)
            if events:
                data = os.read(self.fd, 65536)
                if not data:
                    break  # every writer closed
                for code in np.frombuffer(data, dtype="<i4").tolist():
                    stopping |= self._receive(code)
            while self.pending and self._due(stopping):
                self._fire()
        return self._stats()

    def _receive(self, code: int) -> bool:
        if code >= 0:
            self.pending.append(code)
            self.pending_positions += int(self.counts[code])
            self.active.add(code)
        elif code == STOP:
            return True
        elif code == MEASURE:
            self.recording = True
            del self.batch_sizes[:]
            del self.waits_ms[:]
        elif code == HOLD:
            self.recording = False
        else:
            self.active.discard(slot_of_left_code(code))
        return False

    def _due(self, stopping: bool) -> bool:
        return (
            stopping
            or self.pending_positions >= self.max_batch
            or len(self.pending) >= len(self.active)
            or time.monotonic() >= self.sent_at[self.pending[0]] + self.timeout_s
        )

    def _fire(self) -> None:
        batch = [self.pending.popleft()]
        size = int(self.counts[batch[0]])
        while self.pending and size + int(self.counts[self.pending[0]]) <= self.max_batch:
            slot = self.pending.popleft()
            batch.append(slot)
            size += int(self.counts[slot])
        self.pending_positions -= size
        planes = np.concatenate([self.requests[slot, : self.counts[slot]] for slot in batch])
        priors, values = self.evaluator.evaluate(planes)
        start = 0
        for slot in batch:
            n = int(self.counts[slot])
            self.replies[slot, :n, :COLUMNS] = priors[start : start + n]
            self.replies[slot, :n, COLUMNS] = values[start : start + n]
            start += n
        if self.recording:  # before releasing: a released client overwrites its sent_at
            now = time.monotonic()
            self.batch_sizes.append(size)
            self.waits_ms.extend((now - self.sent_at[slot]) * 1000.0 for slot in batch)
        for slot in batch:
            self.replied[slot].release()
        self.batches_total += 1
        self.positions_total += size

    def _stats(self) -> dict[str, Any]:
        sizes = np.frombuffer(self.batch_sizes, dtype=np.int32)
        hist = np.bincount(sizes) if sizes.size else np.zeros(0, dtype=np.int64)
        return {
            "batch_hist": {int(b): int(c) for b, c in enumerate(hist) if c},
            "waits_ms": np.frombuffer(self.waits_ms, dtype=np.float32).copy(),
            "batches_total": self.batches_total,
            "positions_total": self.positions_total,
        }


class InferenceServer:
    """The main process's handle on the server process: start, MEASURE, STOP, stats.

    The channel is created here (spawn context: its semaphores must travel to spawned and
    forkserver children); `client(slot)` hands out the evaluator a worker process takes.
    """

    def __init__(
        self,
        *,
        clients: int,
        leaves: int,
        net_config: NetConfig,
        state_dict: dict,
        device: str,
        max_batch: int,
        timeout_ms: float,
        torch_threads: int = 1,
    ):
        import multiprocessing

        # the channel's semaphores must travel to forkserver and spawn children: spawn context
        self.channel = Channel(multiprocessing.get_context("spawn"), clients, leaves)
        # a forked server starts at once and shares this process's torch pages, but libgomp
        # breaks in a forked child that wants more than one thread, and CUDA cannot be used
        # in a forked child at all: anything else gets a fresh (spawned) interpreter
        self.start_method = "fork" if device == "cpu" and torch_threads == 1 else "spawn"
        self._ctx = multiprocessing.get_context(self.start_method)
        self._report, report_child = self._ctx.Pipe(duplex=False)
        self._process = self._ctx.Process(
            target=serve,
            args=(
                self.channel,
                net_config,
                state_dict,
                device,
                max_batch,
                timeout_ms,
                report_child,
                torch_threads,
            ),
            name="selfplay-inference-server",
            daemon=True,
        )
        self._report_child = report_child
        self.info: dict[str, Any] = {}

    def start(self, timeout_s: float = 300.0) -> dict[str, Any]:
        """Start the process and wait until its net is built; returns {device, pid}."""
        with light_main():
            self._process.start()
        self._report_child.close()
        kind, payload = self._receive(timeout_s)
        if kind != "ready":
            raise RuntimeError(f"inference server failed to start:\n{payload}")
        self.info = payload
        return payload

    def client(self, slot: int) -> Any:
        return self.channel.client(slot)

    def measure(self) -> None:
        """Start recording batches and waits (warm-up is over)."""
        self.channel.signal(MEASURE)

    def hold(self) -> None:
        """Stop recording (the measured window is over; shutdown is not measured)."""
        self.channel.signal(HOLD)

    def stop(self, timeout_s: float = 60.0) -> dict[str, Any]:
        """Answer what is pending, collect the stats, wait for the process to end."""
        self.channel.signal(STOP)
        kind, payload = self._receive(timeout_s)
        if kind != "stats":
            raise RuntimeError(f"inference server failed:\n{payload}")
        self._process.join(min(timeout_s, 5.0))  # close() terminates a slow exit
        return payload

    def check(self) -> None:
        """Raise if the server died or reported an error (the suite's main loop calls it)."""
        if self._report.poll():
            kind, payload = self._report.recv()
            raise RuntimeError(f"inference server failed:\n{payload}" if kind == "error" else f"unexpected {kind}")
        if not self._process.is_alive():
            raise RuntimeError(f"inference server exited with code {self._process.exitcode}")

    def close(self) -> None:
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(5)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
        self._report.close()

    def _receive(self, timeout_s: float) -> tuple[str, Any]:
        deadline = time.monotonic() + timeout_s
        while not self._report.poll(0.1):
            if not self._process.is_alive() and not self._report.poll():
                raise RuntimeError(f"inference server exited with code {self._process.exitcode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"inference server did not answer within {timeout_s:.0f} s")
        return self._report.recv()

    def __enter__(self) -> InferenceServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
