"""IPC round-trip latency: multiprocessing Queue, Pipe, and shared memory + Event.

Each transport has its own echo process; the main process sends a payload and waits for
it to come back, timing each round trip. Transports take turns in short rounds so that a
change of machine load during the cell affects all three alike.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from multiprocessing import shared_memory

from harness.probe import Probe

ROUND = 100
STOP = b""


def echo_queue(requests, replies) -> None:
    while (msg := requests.get()) != STOP:
        replies.put(msg)


def echo_pipe(conn) -> None:
    while (msg := conn.recv_bytes()) != STOP:
        conn.send_bytes(msg)


def echo_shm(name: str, size: int, request, reply, stop) -> None:
    shm = shared_memory.SharedMemory(name=name)
    try:
        while True:
            request.wait()
            request.clear()
            if stop.is_set():
                return
            shm.buf[0] = (shm.buf[0] + 1) % 256  # touch the payload: the reply is a changed buffer
            reply.set()
    finally:
        shm.close()


class Transport:
    def __init__(self, ctx, size: int) -> None:
        self.ctx, self.size, self.payload = ctx, size, b"x" * size

    def close(self) -> None: ...


class QueueTransport(Transport):
    name = "queue"

    def start(self):
        self.requests, self.replies = self.ctx.Queue(), self.ctx.Queue()
        self.proc = self.ctx.Process(target=echo_queue, args=(self.requests, self.replies), daemon=True)
        self.proc.start()

    def round_trip(self) -> None:
        self.requests.put(self.payload)
        self.replies.get()

    def close(self) -> None:
        self.requests.put(STOP)


class PipeTransport(Transport):
    name = "pipe"

    def start(self):
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=echo_pipe, args=(child,), daemon=True)
        self.proc.start()

    def round_trip(self) -> None:
        self.conn.send_bytes(self.payload)
        self.conn.recv_bytes()

    def close(self) -> None:
        self.conn.send_bytes(STOP)


class ShmTransport(Transport):
    name = "shm"

    def start(self):
        self.shm = shared_memory.SharedMemory(create=True, size=self.size)
        self.request, self.reply, self.stop = self.ctx.Event(), self.ctx.Event(), self.ctx.Event()
        self.proc = self.ctx.Process(
            target=echo_shm, args=(self.shm.name, self.size, self.request, self.reply, self.stop), daemon=True
        )
        self.proc.start()

    def round_trip(self) -> None:
        self.shm.buf[: self.size] = self.payload
        self.request.set()
        self.reply.wait()
        self.reply.clear()

    def close(self) -> None:
        self.stop.set()
        self.request.set()
        self.proc.join(2)
        self.shm.close()
        self.shm.unlink()


def run_pingpong(params, probe: Probe) -> None:
    ctx = mp.get_context("fork")
    transports = [cls(ctx, params.message_bytes) for cls in (QueueTransport, PipeTransport, ShmTransport)]
    try:
        for transport in transports:
            transport.start()
        for transport in transports:  # first messages pay for lazy set-up (feeder threads)
            transport.round_trip()
        done = 0
        while not probe.should_stop():
            for transport in transports:
                metric = f"{transport.name}_rtt_us"
                for _ in range(ROUND):
                    t0 = time.perf_counter()
                    transport.round_trip()
                    probe.observe(metric, (time.perf_counter() - t0) * 1e6)
                probe.count("round_trips", ROUND)
                done += ROUND
                if probe.target_work is not None and done >= probe.target_work:
                    probe.work(requested=probe.target_work, done=done)
                    return
    finally:
        for transport in transports:
            try:
                transport.close()
            except (OSError, ValueError, FileNotFoundError):
                pass
            proc = getattr(transport, "proc", None)
            if proc is not None:
                proc.join(1)
                if proc.is_alive():
                    proc.kill()
