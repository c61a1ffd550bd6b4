"""The inference server: one process owns the net and batches every client's requests.

When a batch fires is the `gather` rule's business; in every rule a batch fires when the
waiting requests hold `max_batch` positions, or when every client that is still playing is
waiting (no further request can arrive, so waiting longer is pure loss):

- `full`: only then;
- `deadline`: also once `timeout_ms` has passed since the oldest waiting request was sent;
- `first`: also as soon as a compute thread is free: whatever arrived while the previous
  batch was computed forms the next one (no waiting once one request is there);
- `share`: also once the waiting clients are one compute thread's share of the playing ones
  (all of them over `inflight`), or at the deadline: with two compute threads the clients
  split into two halves that take turns, one half searching while the other's batch is
  computed, so both threads stay busy (`deadline` waits for them all and so keeps one busy
  whenever the playing clients fit one batch; `first` fires whatever trickled in first).

Requests are never split: a batch takes waiting requests in arrival order while they fit
in `max_batch` (always at least one).

The main thread gathers (reads the request pipe, decides when a batch fires); `inflight`
compute threads each stage a fired batch into their own buffer, run the forward pass
(torch releases the GIL) and write the replies, so requests are gathered while a batch is
computed and, with `inflight` > 1, several batches are computed at once.

It records the size (positions) of every batch and the wait of every request (sent ->
reply written, i.e. queueing plus the forward pass), the seconds it sat idle with no batch
computing, its CPU seconds, from the MEASURE signal to HOLD, and sends them to the suite's
main process when told to STOP, with the bare forward pass's rate at its mean batch (its
roofline, timed after the workers stopped, with the same threads). Runs in a forked
process on CPU with one torch thread and one compute thread, in a spawned one otherwise
(CUDA cannot live in a forked child, and libgomp hangs in a forked child that uses more
than one thread).
"""

from __future__ import annotations

import os
import queue
import select
import threading
import time
import traceback
from array import array
from collections import deque
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from suites.selfplay.channel import HOLD, MEASURE, STOP, Channel, slot_of_left_code
from suites.selfplay.launch import light_main
from suites.selfplay.net import NetConfig

GATHER_RULES = ("full", "deadline", "first", "share")
TIMED_RULES = ("deadline", "share")  # the rules that also fire timeout_ms after the oldest request
ROOFLINE_S = 0.5  # how long the bare forward pass is timed at the end of a cell


def serve(
    channel: Channel,
    net_config: NetConfig,
    state_dict: dict,
    device: str,
    max_batch: int,
    timeout_ms: float,
    report: Connection,
    torch_threads: int = 1,
    gather: str = "deadline",
    inflight: int = 1,
) -> None:
    """Process target: build the net, say `ready`, serve until STOP, send `stats`."""
    try:
        import torch

        if torch_threads:
            torch.set_num_threads(torch_threads)

        from suites.selfplay.net import build_net
        from suites.selfplay.staging import StagedForward

        net = build_net(net_config, state_dict=state_dict)
        capacity = max(max_batch, channel.leaves)  # a batch holds at least one whole request
        forwards = [StagedForward(net, torch.device(device), capacity) for _ in range(inflight)]
        for forward in forwards:
            forward.forward(1)
        report.send(
            ("ready", {"device": forwards[0].net_device, "pid": os.getpid(), "threads": torch.get_num_threads()})
        )
        stats = _Server(channel, forwards, max_batch, timeout_ms, gather).run()
        stats["roofline_evals_per_s"] = roofline(forwards, stats)
        stats["torch_threads"] = torch.get_num_threads()
        stats["compute_threads"] = len(forwards)
        report.send(("stats", stats))
    except BaseException:
        report.send(("error", traceback.format_exc()))
        raise


def roofline(forwards: list[Any], stats: dict[str, Any]) -> float | None:
    """Positions per second of the bare forward pass at the server's mean batch, with every
    compute thread at it at once (the server's own layout of threads)."""
    hist = stats["batch_hist"]
    batches = sum(hist.values())
    if not batches:
        return None
    mean = round(sum(size * count for size, count in hist.items()) / batches)
    rates = [0.0] * len(forwards)

    def time_one(i: int) -> None:
        rates[i] = forwards[i].rate(mean, ROOFLINE_S)

    threads = [threading.Thread(target=time_one, args=(i,)) for i in range(len(forwards))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(rates)


class _Server:
    def __init__(self, channel: Channel, forwards: list[Any], max_batch: int, timeout_ms: float, gather: str):
        if gather not in GATHER_RULES:
            raise ValueError(f"gather={gather!r}: allowed are {', '.join(GATHER_RULES)}")
        self.forwards = forwards
        self.max_batch = max_batch
        self.timeout_s = timeout_ms / 1000.0
        self.gather = gather
        views = channel.views()
        self.requests = views["requests"]
        self.replies = views["replies"]
        self.counts = views["counts"]
        self.sent_at = views["sent_at"]
        self.replied = channel.replied
        self.fd = channel.reader.fileno()
        self.wake_r, self.wake_w = os.pipe()  # compute threads -> gatherer: a thread is free
        self.pending: deque[int] = deque()
        self.pending_positions = 0
        self.active: set[int] = set()  # clients seen and not yet left
        self.work: queue.SimpleQueue[tuple[list[int], int] | None] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.busy = 0  # batches fired and not yet answered
        self.recording = False
        self.batch_sizes = array("i")
        self.waits_ms = array("f")
        self.batches_total = 0
        self.positions_total = 0
        self.idle_s = 0.0  # recorded seconds with no batch computing
        self.idle_since = time.monotonic()
        self.window_started = self.cpu_started = 0.0
        self.window_s = self.cpu_s = 0.0
        self.compute_s = 0.0  # recorded seconds of forward passes, summed over threads

    def run(self) -> dict[str, Any]:
        threads = [threading.Thread(target=self._compute, args=(f,), daemon=True) for f in self.forwards]
        for thread in threads:
            thread.start()
        try:
            self._gather()
        finally:
            for _ in threads:
                self.work.put(None)
            for thread in threads:
                thread.join()
            os.close(self.wake_r)
            os.close(self.wake_w)
        if self.recording:
            self._hold()
        return self._stats()

    def _gather(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        poller.register(self.wake_r, select.POLLIN)
        stopping = closed = False
        while True:
            free = self.busy < len(self.forwards)
            if self.pending and free:
                wait = 0.0 if stopping else self._timeout()
            elif stopping and not self.pending:
                if not self.busy:
                    return
                wait = None
            else:
                wait = None
            for fd, _ in poller.poll(None if wait is None else max(0.0, wait) * 1000.0):
                if fd == self.wake_r:
                    os.read(self.wake_r, 4096)
                    continue
                data = os.read(self.fd, 65536)
                if not data:
                    closed = stopping = True  # every writer closed
                    poller.unregister(self.fd)
                    continue
                for code in np.frombuffer(data, dtype="<i4").tolist():
                    stopping |= self._receive(code)
            while self.pending and self.busy < len(self.forwards) and self._due(stopping):
                self._fire()
            if closed and not self.pending and not self.busy:
                return

    def _timeout(self) -> float | None:
        """Seconds until the waiting requests are due by time (None: only an event makes them due)."""
        if self._due(False):
            return 0.0
        if self.gather in TIMED_RULES:
            return self.sent_at[self.pending[0]] + self.timeout_s - time.monotonic()
        return None

    def _receive(self, code: int) -> bool:
        if code >= 0:
            self.pending.append(code)
            self.pending_positions += int(self.counts[code])
            self.active.add(code)
        elif code == STOP:
            return True
        elif code == MEASURE:
            with self.lock:
                self.recording = True
                del self.batch_sizes[:]
                del self.waits_ms[:]
                now = time.monotonic()
                self.idle_s = self.compute_s = 0.0
                self.idle_since = now
                self.window_started, self.cpu_started = now, time.process_time()
        elif code == HOLD:
            self._hold()
        else:
            self.active.discard(slot_of_left_code(code))
        return False

    def _hold(self) -> None:
        with self.lock:
            now = time.monotonic()
            if not self.busy:
                self.idle_s += now - self.idle_since
            self.window_s = now - self.window_started
            self.cpu_s = time.process_time() - self.cpu_started
            self.recording = False

    def _due(self, stopping: bool) -> bool:
        return (
            stopping
            or self.pending_positions >= self.max_batch
            or len(self.pending) >= len(self.active)
            or self.gather == "first"
            or (self.gather == "share" and len(self.pending) * len(self.forwards) >= len(self.active))
            or (self.gather in TIMED_RULES and time.monotonic() >= self.sent_at[self.pending[0]] + self.timeout_s)
        )

    def _fire(self) -> None:
        batch = [self.pending.popleft()]
        size = int(self.counts[batch[0]])
        while self.pending and size + int(self.counts[self.pending[0]]) <= self.max_batch:
            slot = self.pending.popleft()
            batch.append(slot)
            size += int(self.counts[slot])
        self.pending_positions -= size
        with self.lock:
            if not self.busy and self.recording:
                self.idle_s += time.monotonic() - self.idle_since
            self.busy += 1
        self.work.put((batch, size))

    def _compute(self, forward: Any) -> None:
        """A compute thread: stage, forward, reply, for each batch the gatherer fires."""
        while (job := self.work.get()) is not None:
            batch, size = job
            start = 0
            for slot in batch:
                n = int(self.counts[slot])
                forward.inputs[start : start + n] = self.requests[slot, :n]
                start += n
            began = time.monotonic()
            out = forward.forward(size)
            computed = time.monotonic() - began
            start = 0
            for slot in batch:
                n = int(self.counts[slot])
                self.replies[slot, :n] = out[start : start + n]
                start += n
            with self.lock:
                if self.recording:  # before releasing: a released client overwrites its sent_at
                    now = time.monotonic()
                    self.batch_sizes.append(size)
                    self.waits_ms.extend((now - self.sent_at[slot]) * 1000.0 for slot in batch)
                    self.compute_s += computed
                self.batches_total += 1
                self.positions_total += size
                self.busy -= 1
                if not self.busy:
                    self.idle_since = time.monotonic()
            for slot in batch:
                self.replied[slot].release()
            os.write(self.wake_w, b"x")

    def _stats(self) -> dict[str, Any]:
        sizes = np.frombuffer(self.batch_sizes, dtype=np.int32)
        hist = np.bincount(sizes) if sizes.size else np.zeros(0, dtype=np.int64)
        return {
            "batch_hist": {int(b): int(c) for b, c in enumerate(hist) if c},
            "waits_ms": np.frombuffer(self.waits_ms, dtype=np.float32).copy(),
            "batches_total": self.batches_total,
            "positions_total": self.positions_total,
            "positions_recorded": int(sizes.sum()),
            "window_s": self.window_s,
            "idle_s": self.idle_s,
            "cpu_s": self.cpu_s,
            "compute_s": self.compute_s,
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
        gather: str = "deadline",
        inflight: int = 1,
    ):
        import multiprocessing

        if gather not in GATHER_RULES:
            raise ValueError(f"gather={gather!r}: allowed are {', '.join(GATHER_RULES)}")
        if inflight < 1:
            raise ValueError(f"inflight={inflight}: at least 1 batch must be computed at a time")
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
                gather,
                inflight,
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
