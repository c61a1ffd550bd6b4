"""The pyperf program behind `harness limits`: `python -m harness.limits_bench [options]`.

pyperf.Runner re-runs this module in its own worker processes (calibration, warm-ups,
values) and writes one JSON file; harness.limits turns that into a run directory. Each
benchmark is a `bench_time_func` whose set-up (an echo process, a net) happens once per
pyperf worker, outside the timed loops.

Benchmarks: `queue_rtt`, `pipe_rtt`, `shm_rtt` (a round trip of `--message-bytes` to an echo
process through multiprocessing Queue, Pipe, shared memory + Event), and `forward_b<B>`
(one forward pass of the self-play policy-value net on a batch of B positions).
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Callable
from multiprocessing import shared_memory
from typing import Any

import pyperf

ROWS, COLUMNS = 6, 7
NET_SOURCE = "suites.selfplay.net"
STOP = b""

_state: dict[str, Any] = {}  # per pyperf worker: the echo process or net set up on first use


# ---------------------------------------------------------------------- the network
def net_builder() -> tuple[Callable[[int, int], Any], int, str]:
    """(build(blocks, channels) -> torch module taking (B, planes, 6, 7), planes, source).

    The limits are those of the self-play suite's own network, so they are measured on it;
    this is the one place the harness names a suite, because the issue asks for exactly
    that network's curve.
    """
    from suites.selfplay.connect4 import PLANES
    from suites.selfplay.net import NetConfig, build_net

    return (lambda blocks, channels: build_net(NetConfig(blocks=blocks, channels=channels))), PLANES, NET_SOURCE


def time_forward(loops: int, batch: int, device: str, blocks: int, channels: int, threads: int = 0) -> float:
    import torch

    if "net" not in _state:
        if threads > 0:
            torch.set_num_threads(threads)
        build, planes, _ = net_builder()
        _state["net"] = build(blocks, channels).to(device)
        _state["planes"] = planes
    net = _state["net"]
    x = torch.zeros(batch, _state["planes"], ROWS, COLUMNS, device=device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    with torch.inference_mode():
        net(x)  # first call of this shape: allocator and kernel selection
        sync()
        t0 = time.perf_counter()
        for _ in range(loops):
            net(x)
        sync()
        return time.perf_counter() - t0


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
    for key in ("queue",):
        if key in _state:
            _state[key][0].put(STOP)
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


# ---------------------------------------------------------------------- pyperf program
def add_args(cmd: list[str], args: Any) -> None:
    """Our options, passed on to pyperf's worker processes."""
    cmd += ["--device", args.device, "--blocks", str(args.blocks), "--channels", str(args.channels)]
    cmd += ["--batches", args.batches, "--message-bytes", str(args.message_bytes), "--parts", args.parts]
    cmd += ["--threads", str(args.threads)]


def main() -> None:
    # 6 worker processes x 3 values (pyperf's default is 20 x 3): 14 benchmarks, most of
    # them importing torch per worker, stay within minutes; --rigorous doubles, --fast halves.
    runner = pyperf.Runner(processes=6, add_cmdline_args=add_args, program_args=("-m", "harness.limits_bench"))
    parser = runner.argparser
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--batches", default="1,2,4,8,16,32,64,128,256,512,1024")
    parser.add_argument("--message-bytes", type=int, default=64)
    parser.add_argument("--parts", default="ipc,net")
    parser.add_argument("--threads", type=int, default=0)
    args = runner.parse_args()
    parts = set(args.parts.split(","))
    size = args.message_bytes
    try:
        if "ipc" in parts:
            runner.bench_time_func("queue_rtt", time_queue, size, inner_loops=1)
            runner.bench_time_func("pipe_rtt", time_pipe, size, inner_loops=1)
            runner.bench_time_func("shm_rtt", time_shm, size, inner_loops=1)
        if "net" in parts:
            for batch in (int(b) for b in args.batches.split(",")):
                runner.bench_time_func(
                    f"forward_b{batch}",
                    time_forward,
                    batch,
                    args.device,
                    args.blocks,
                    args.channels,
                    args.threads,
                    inner_loops=1,
                )
    finally:
        _cleanup()


if __name__ == "__main__":
    main()
