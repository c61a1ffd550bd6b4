"""Worker processes of the processes and server backends, and their message queue.

Each worker sends one `hello` when it is ready, then one `done` or `error` at the end
(workers.py); the main process polls the queue while it supervises, raises on a worker's
error or death, and always reaps every worker.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from typing import Any

from suites.selfplay.backends.base import POLL_S, START_TIMEOUT_S
from suites.selfplay.launch import light_main


class WorkerProcesses:
    """Worker processes and their message queue: hellos, done, errors; always reaped."""

    def __init__(self, mp_context: Any):
        self.ctx = mp_context
        self.messages = mp_context.Queue()
        self.processes: list[Any] = []
        self.hellos: dict[int, dict[str, Any]] = {}
        self.done: dict[int, int] = {}

    def start(self, target: Callable[..., None], slot: int, *args: Any) -> None:
        process = self.ctx.Process(target=target, args=(slot, *args), name=f"selfplay-{slot}", daemon=True)
        with light_main():
            process.start()
        self.processes.append(process)

    def poll(self, timeout: float) -> None:
        """Take the messages that arrive within `timeout`; raise on a worker's error or death."""
        try:
            kind, slot, payload = self.messages.get(timeout=timeout)
            while True:
                if kind == "error":
                    raise RuntimeError(f"self-play worker {slot} failed:\n{payload}")
                (self.hellos if kind == "hello" else self.done)[slot] = payload
                kind, slot, payload = self.messages.get_nowait()
        except queue.Empty:
            pass
        for slot, process in enumerate(self.processes):
            if process.exitcode not in (None, 0) and slot not in self.done:
                raise RuntimeError(f"self-play worker {slot} died with exit code {process.exitcode}")

    def wait_hellos(self, check: Callable[[], None] | None = None) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while len(self.hellos) < len(self.processes):
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(self.hellos)} of {len(self.processes)} workers started")
            self.poll(POLL_S)
            if check is not None:
                check()

    def all_exited(self) -> bool:
        return all(p.exitcode is not None for p in self.processes)

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))
        try:
            self.poll(0.0)
        except RuntimeError:
            pass

    def reap(self) -> None:
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        for process in self.processes:
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join()
        self.messages.close()
        self.messages.join_thread()
