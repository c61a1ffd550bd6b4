"""The suite's main process: build the net, pick the backend, check where the nets ran.

Every backend plays games with the same code and differs only in where the games run
and where the net runs (backends/base.py says what a backend does). The driver resolves
the device, builds the net once (the backends copy its weights wherever they run it),
splits fixed work over the workers, and fails the run when a net ended up on another
device than the one asked for.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from harness.probe import Probe, SuiteError, resolve_workers, split_work
from suites.selfplay.backends import BACKENDS
from suites.selfplay.backends.base import Setup
from suites.selfplay.local import resolve_device
from suites.selfplay.mcts import SearchConfig
from suites.selfplay.net import NetConfig, build_net, parameter_count
from suites.selfplay.play import PlayConfig


def run_selfplay(params: Any, probe: Probe, started: float | None = None) -> None:
    started = time.perf_counter() if started is None else started
    backend = BACKENDS.get(params.backend)
    device = resolve_device(params.device)
    if params.torch_threads and backend.net_in_main_process:
        torch.set_num_threads(params.torch_threads)
    net_config = NetConfig(blocks=params.blocks, channels=params.channels)
    search = SearchConfig(
        simulations=params.simulations,
        leaves=params.leaves,
        c_puct=params.c_puct,
        dirichlet_alpha=params.dirichlet_alpha,
        dirichlet_eps=params.dirichlet_eps,
    )
    play_config = PlayConfig(search=search, temperature_moves=params.temperature_moves)
    net = build_net(net_config, seed=params.seed)
    probe.set("net_params", parameter_count(net))
    workers = 1 if backend.single_worker else resolve_workers(params.workers)
    if probe.target_work is not None:
        shares: list[int | None] = list(split_work(probe.target_work, workers))
        if len(shares) < workers:
            probe.warn(f"{probe.target_work} games over {workers} workers: only {len(shares)} started")
    else:
        shares = [None] * workers
    setup = Setup(params, probe, device, net_config, play_config, net, shares, started)
    devices = backend().play(setup)
    probe.set("worker_devices", sorted(devices))
    check_devices(params.device, device, devices, params.backend)


def check_devices(asked: str, device: torch.device, devices: set[str], backend: str) -> None:
    """Fail loudly when a net ended up elsewhere than asked (workers that silently built
    their nets on the CPU are a classic)."""
    wrong = sorted(d for d in devices if torch.device(d).type != device.type)
    if wrong:
        raise SuiteError(
            f"device={asked} resolved to {device.type}, but nets ran on {', '.join(wrong)}: "
            f"backend {backend} did not move its nets to the device asked for"
        )
