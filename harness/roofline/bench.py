"""The pyperf program behind `harness limits`: `python -m harness.roofline.bench [options]`.

pyperf.Runner re-runs this module in its own worker processes (calibration, warm-ups,
values) and writes one JSON file; harness.roofline.measure turns that into a run
directory. Each benchmark is a `bench_time_func` whose set-up (an echo process, a suite's
net) happens once per pyperf worker, outside the timed loops.

Benchmarks: `queue_rtt`, `pipe_rtt`, `shm_rtt` (a round trip of `--message-bytes` to an echo
process through multiprocessing Queue, Pipe, shared memory + Event), and for every part
`SUITE.NAME` a suite's limit benchmark `NAME_b<SIZE>` at each size, timed by the function
its vocabulary names, with the options given as JSON in `--options`.
"""

from __future__ import annotations

import importlib
import json
import multiprocessing as mp
import time
from collections.abc import Callable
from multiprocessing import shared_memory
from typing import Any

import pyperf

from harness.roofline import IPC

STOP = b""

_state: dict[str, Any] = {}  # per pyperf worker: the echo process set up on first use


# ---------------------------------------------------------------------- IPC round trips
def _echo_queue(requests: Any, replies: Any) -> None:
    while (msg := requests.get()) != STOP:
        replies.put(msg)


def _echo_pipe(conn: Any) -> None:
    while (msg := conn.recv_bytes()) != STOP:
        conn.send_bytes(msg)


def _echo_shm(name: str, request: Any, reply: Any) -> None:
    shm = shared_memory.SharedMemory(name=name)
    try:
        while True:
            request.wait()
            request.clear()
            if shm.buf[0] == 255:
                return
            shm.buf[1] = (shm.buf[1] + 1) % 256  # touch the buffer: the reply is a change
            reply.set()
    finally:
        shm.close()


def _start(target: Callable[..., None], *args: Any) -> None:
    proc = mp.get_context("fork").Process(target=target, args=args, daemon=True)
    proc.start()
    _state["proc"] = proc


def time_queue(loops: int, size: int) -> float:
    if "queue" not in _state:
        ctx = mp.get_context("fork")
        _state["queue"] = (ctx.Queue(), ctx.Queue())
        _start(_echo_queue, *_state["queue"])
    requests, replies = _state["queue"]
    payload = b"x" * size
    requests.put(payload)
    replies.get()  # the queues' feeder threads start on first use
    t0 = time.perf_counter()
    for _ in range(loops):
        requests.put(payload)
        replies.get()
    return time.perf_counter() - t0


def time_pipe(loops: int, size: int) -> float:
    if "pipe" not in _state:
        here, there = mp.get_context("fork").Pipe()
        _state["pipe"] = here
        _start(_echo_pipe, there)
    conn = _state["pipe"]
    payload = b"x" * size
    t0 = time.perf_counter()
    for _ in range(loops):
        conn.send_bytes(payload)
        conn.recv_bytes()
    return time.perf_counter() - t0


def time_shm(loops: int, size: int) -> float:
    if "shm" not in _state:
        ctx = mp.get_context("fork")
        shm = shared_memory.SharedMemory(create=True, size=max(size, 2))
        _state["shm"] = (shm, ctx.Event(), ctx.Event())
        _start(_echo_shm, shm.name, _state["shm"][1], _state["shm"][2])
    shm, request, reply = _state["shm"]
    payload = b"x" * size
    t0 = time.perf_counter()
    for _ in range(loops):
        shm.buf[2 : 2 + size] = payload if size + 2 <= shm.size else payload[: shm.size - 2]
        request.set()
        reply.wait()
        reply.clear()
    return time.perf_counter() - t0


def _cleanup() -> None:
    if "shm" in _state:
        shm, request, _ = _state["shm"]
        shm.buf[0] = 255
        request.set()
    if "queue" in _state:
        _state["queue"][0].put(STOP)
    if "pipe" in _state:
        _state["pipe"].send_bytes(STOP)
    proc = _state.get("proc")
    if proc is not None:
        proc.join(2)
        if proc.is_alive():
            proc.kill()
    if "shm" in _state:
        _state["shm"][0].close()
        _state["shm"][0].unlink()


# ---------------------------------------------------------------------- suite benchmarks
def timer(target: str) -> Callable[[int, int, dict[str, Any]], float]:
    """A suite's timing function from its "module:function" name."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def suite_benchmark(part: str) -> Any:
    """The LimitBenchmark that `SUITE.NAME` names."""
    from harness.model.registry import get_suite

    suite, _, name = part.partition(".")
    for bench in get_suite(suite).words.limits:
        if bench.name == name:
            return bench
    raise SystemExit(f"suite {suite} declares no limit benchmark {name!r}")


# ---------------------------------------------------------------------- pyperf program
def add_args(cmd: list[str], args: Any) -> None:
    """Our options, passed on to pyperf's worker processes."""
    cmd += ["--parts", args.parts, "--sizes", args.sizes, "--message-bytes", str(args.message_bytes)]
    cmd += ["--options", args.options]


def main() -> None:
    # 6 worker processes x 3 values (pyperf's default is 20 x 3): a dozen benchmarks, most
    # of them importing torch per worker, stay within minutes; --rigorous doubles, --fast halves.
    runner = pyperf.Runner(processes=6, add_cmdline_args=add_args, program_args=("-m", "harness.roofline.bench"))
    parser = runner.argparser
    parser.add_argument("--parts", default=IPC)
    parser.add_argument("--sizes", default="")
    parser.add_argument("--message-bytes", type=int, default=64)
    parser.add_argument("--options", default="{}", help="JSON: {part: {option: value}}")
    args = runner.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    options = json.loads(args.options)
    size = args.message_bytes
    try:
        for part in parts:
            if part == IPC:
                runner.bench_time_func("queue_rtt", time_queue, size, inner_loops=1)
                runner.bench_time_func("pipe_rtt", time_pipe, size, inner_loops=1)
                runner.bench_time_func("shm_rtt", time_shm, size, inner_loops=1)
                continue
            bench = suite_benchmark(part)
            sizes = [int(s) for s in args.sizes.split(",") if s] or list(bench.sizes)
            timed = timer(bench.time)
            for n in sizes:
                runner.bench_time_func(f"{part}:{bench.name}_b{n}", timed, n, options.get(part, {}), inner_loops=1)
    finally:
        _cleanup()


if __name__ == "__main__":
    main()
