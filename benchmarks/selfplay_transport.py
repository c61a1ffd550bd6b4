"""What the inference server's transport costs: evals/s through the server versus the same
batches evaluated in-process.

K client processes (no search, no torch) each send the same `leaves` positions again and
again; the server fires when it holds K x leaves positions, so every batch has exactly the
size the in-process loop evaluates. Both sides use one torch thread (the suite's default).
Clocks start after a few warm-up requests, when every client has reached a barrier.

Two views of the overhead, per round (rounds alternate in-process and server runs):
- wall: 1 - (server evals/s) / (in-process evals/s). What the issue asks for, but on a
  machine shared with other jobs each process's share of a core swings from round to
  round, so single rounds scatter widely; read the median.
- cpu: CPU seconds per eval of the server process plus every client, over CPU seconds per
  eval in-process, minus 1: what the transport costs in work, independent of how much
  of a core each process got. `server cpu` counts the server process alone (its share
  bounds throughput when the clients run on other cores).

    python benchmarks/selfplay_transport.py --clients 8 --leaves 8 --rounds 7
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time

import numpy as np
import psutil
import torch

from suites.selfplay.connect4 import Board, encode
from suites.selfplay.launch import light_main
from suites.selfplay.local import LocalEvaluator
from suites.selfplay.net import NetConfig, build_net, portable_state
from suites.selfplay.server import InferenceServer
from suites.selfplay.workers import request_worker


def sample_planes(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    boards, board = [], Board()
    while len(boards) < n:
        if board.is_terminal:
            board = Board()
        board = board.play(int(rng.choice(board.legal_moves())))
        boards.append(board)
    return encode(boards)


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def in_process(net: torch.nn.Module, planes: np.ndarray, repeats: int) -> tuple[float, float]:
    """(evals per wall second, evals per CPU second)."""
    evaluator = LocalEvaluator(net, torch.device("cpu"))
    for _ in range(3):
        evaluator.evaluate(planes)
    start, cpu_start = time.perf_counter(), time.process_time()
    for _ in range(repeats):
        evaluator.evaluate(planes)
    evals = planes.shape[0] * repeats
    return evals / (time.perf_counter() - start), evals / (time.process_time() - cpu_start)


def through_server(
    net: torch.nn.Module, net_config: NetConfig, planes: np.ndarray, args: argparse.Namespace
) -> dict[str, float]:
    clients, leaves = args.clients, args.leaves
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["suites.selfplay.workers"])
    out = ctx.Queue()
    barrier = ctx.Barrier(clients + 1)  # clocks start together, after a few warm-up requests
    with InferenceServer(
        clients=clients,
        leaves=leaves,
        net_config=net_config,
        state_dict=portable_state(net),
        device="cpu",
        max_batch=clients * leaves,
        timeout_ms=args.timeout_ms,
    ) as server:
        info = server.start()
        server_process = psutil.Process(info["pid"])
        shares = [planes[slot * leaves : (slot + 1) * leaves] for slot in range(clients)]
        processes = [
            ctx.Process(target=request_worker, args=(slot, server.client(slot), share, args.repeats, out, barrier))
            for slot, share in enumerate(shares)
        ]
        with light_main():
            for process in processes:
                process.start()
        barrier.wait()
        server_cpu_start = cpu_seconds(server_process)
        server.measure()  # the batch statistics leave out the staggered warm-up
        results = [out.get(timeout=600) for _ in processes]
        server_cpu = cpu_seconds(server_process) - server_cpu_start
        for process in processes:
            process.join()
        stats = server.stop()
    evals = clients * leaves * args.repeats
    hist = stats["batch_hist"]
    return {
        "evals_per_s": evals / max(r[3] for r in results),
        "evals_per_cpu_s": evals / (server_cpu + sum(r[4] for r in results)),
        "evals_per_server_cpu_s": evals / server_cpu,
        "batch_mean": sum(size * count for size, count in hist.items()) / max(1, sum(hist.values())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--leaves", type=int, default=8)
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=100, help="requests per client per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--timeout-ms", type=float, default=1000.0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    net_config = NetConfig(blocks=args.blocks, channels=args.channels)
    net = build_net(net_config, seed=0)
    planes = sample_planes(args.clients * args.leaves, seed=1)
    rows = []
    for round_ in range(args.rounds):
        local_wall, local_cpu = in_process(net, planes, args.repeats)
        served = through_server(net, net_config, planes, args)
        row = {
            "in_process_evals_per_s": local_wall,
            "server_evals_per_s": served["evals_per_s"],
            "batch_mean": served["batch_mean"],
            "wall_overhead_pct": 100 * (1 - served["evals_per_s"] / local_wall),
            "cpu_overhead_pct": 100 * (local_cpu / served["evals_per_cpu_s"] - 1),
            "server_cpu_overhead_pct": 100 * (local_cpu / served["evals_per_server_cpu_s"] - 1),
        }
        rows.append(row)
        print(
            f"round {round_}: in-process {local_wall:6.0f} evals/s, server {row['server_evals_per_s']:6.0f} "
            f"evals/s (batch {row['batch_mean']:.1f}); overhead wall {row['wall_overhead_pct']:6.1f} %, "
            f"cpu {row['cpu_overhead_pct']:5.1f} %, server cpu {row['server_cpu_overhead_pct']:5.1f} %",
            flush=True,
        )
    summary = {
        "clients": args.clients,
        "leaves": args.leaves,
        "batch": args.clients * args.leaves,
        "net": f"{args.blocks}x{args.channels}",
        "rounds": args.rounds,
        **{f"median_{key}": statistics.median(r[key] for r in rows) for key in rows[0] if key != "batch_mean"},
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
