"""AlphaZero-style self-play: Connect Four, a PyTorch policy-value ResNet, batched PUCT MCTS.

Its speed depends on where inference runs and how it is batched, which is what the
backends vary: `sequential` (one game loop in the suite's process), `threads` (workers
share one in-process net, under the GIL), `processes` (every worker builds its own net on
`device`) and `server` (torch-free worker processes send positions through shared memory
to one inference-server process that batches them), and `ray` (game actors on Ray, with the
net in one batching inference actor or in every game actor).

Importing this package is cheap (no torch): `run` imports the heavy parts lazily.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.probe import Advice, Move, Probe, Rate, Resources, Suite, Vocabulary, resolve_workers
from suites.selfplay.backends import BACKENDS
from suites.selfplay.limits import FORWARD


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: BACKENDS.field(
        "server",
        "sequential (one game loop, in-process net), threads (share one in-process net), "
        "processes (a net per worker process), server (torch-free workers + one batching inference server), "
        "ray (game actors on Ray; see ray_inference; needs the [ray] extra)",
    )
    workers: int = Field(2, ge=0, description="self-play workers (0 = one per core); ignored by sequential")
    device: Literal["cpu", "cuda", "auto"] = Field(
        "cpu", description="where nets run: cpu, cuda, or auto (cuda when available)"
    )
    simulations: int = Field(
        32, ge=1, description="MCTS simulations per move", json_schema_extra={"unit": "simulations"}
    )
    leaves: int = Field(
        8,
        ge=1,
        le=256,
        description="leaves selected per search step with virtual loss and evaluated as one batch",
        json_schema_extra={"unit": "positions"},
    )
    max_batch: int = Field(
        64,
        ge=1,
        description="server (and ray with ray_inference=server): fire a batch once waiting requests hold this many positions",
        json_schema_extra={"unit": "positions"},
    )
    timeout_ms: float = Field(
        5.0,
        ge=0,
        description="server, ray: fire a batch this long after its oldest request was sent, full or not",
        json_schema_extra={"unit": "ms"},
    )
    games_per_worker: int = Field(
        4,
        ge=1,
        le=64,
        description="server: games each worker keeps in flight, one channel slot each; while one game's leaves "
        "wait for the server the worker searches another (other backends play one game at a time). "
        "4: more evals/s than 1 at leaves 1 and 8 (docs/records/2026-11-25-inference-server.md); 8 keeps "
        "too many games unfinished for a short window to count games",
        json_schema_extra={"unit": "games"},
    )
    gather: Literal["full", "deadline", "first", "share"] = Field(
        "share",
        description="server: when a batch fires besides a full batch (max_batch) or every playing client "
        "waiting: full (never otherwise), deadline (timeout_ms after the oldest request was sent), first "
        "(as soon as a compute thread is free: what arrived during the last batch), share (once the waiting "
        "clients are 1/inflight of the playing ones, or at the deadline: the clients take turns in inflight groups, "
        "so inflight compute threads stay busy where every client fits one batch; the default, "
        "docs/records/2026-11-25-inference-server.md)",
    )
    inflight: int = Field(
        2,
        ge=1,
        le=16,
        description="server: batches computed at once, one compute thread each; requests are gathered "
        "while they compute. 2: two single-threaded forward passes side by side beat one pass with two "
        "intra-op threads, which stall whenever a busy core deschedules one of them "
        "(docs/records/2026-11-25-inference-server.md)",
        json_schema_extra={"unit": "batches"},
    )
    server_threads: int = Field(
        0,
        ge=0,
        description="server: torch intra-op threads of the inference server; 0 = sized from the cell's CPU "
        "budget: the cores this cell may run on less one per worker, over inflight, at least 1",
    )
    ray_inference: Literal["server", "local"] = Field(
        "server",
        description="ray only: server (one inference actor batches every game actor's leaves, with max_batch "
        "and timeout_ms; game actors stay torch-free) or local (a net in every game actor)",
    )
    blocks: int = Field(2, ge=0, le=40, description="residual blocks of the net")
    channels: int = Field(32, ge=1, le=512, description="channels of the net's convolutions")
    c_puct: float = Field(1.5, gt=0, description="PUCT exploration constant")
    dirichlet_alpha: float = Field(1.0, gt=0, description="Dirichlet noise concentration at the root")
    dirichlet_eps: float = Field(0.25, ge=0, le=1, description="weight of the root noise (0 = none)")
    temperature_moves: int = Field(
        8,
        ge=0,
        description="plies sampled in proportion to visit counts; later plies play the most visited",
        json_schema_extra={"unit": "plies"},
    )
    torch_threads: int = Field(
        1,
        ge=0,
        description="intra-op threads of the net in the suite's process (sequential, threads) and in ray's "
        "inference actor; 0 = torch's default (one per core), which spins badly on busy cores. "
        "Nets in worker processes always use 1; the server backend's are server_threads",
    )
    seed: int = Field(0, description="seed of the net's weights and of every worker's games")


def resources(params: Params) -> Resources:
    if params.backend == "sequential":
        return Resources(cpus=1)
    workers = resolve_workers(params.workers)
    if params.backend == "server" or (params.backend == "ray" and params.ray_inference == "server"):
        return Resources(cpus=workers + 1)
    return Resources(cpus=workers)


def run(params: Params, probe: Probe) -> None:
    import time

    started = time.perf_counter()  # start-up includes importing torch
    from suites.selfplay.driver import run_selfplay

    run_selfplay(params, probe, started)


VOCABULARY = Vocabulary(
    # a game lasts 7-42 moves and many seconds at 128 workers: moves are the finer count
    rates=(Rate("games", per="min", made_of="moves"), Rate("moves"), Rate("nn_evals")),
    report=("batch_mean", "wait_ms_p95", "server_efficiency_pct", "server_idle_share", "client_wait_share"),
    metrics={"server_efficiency_pct": "higher", "server_idle_share": "lower", "client_wait_share": "lower"},
    remedies={
        "pipeline.serial": (
            Advice(
                "more games_per_worker than {games_per_worker} (a worker searches one game while another's "
                "leaves are computed)"
            ),
            Advice(
                "inflight=2 with gather=share (the clients take turns in two groups)",
                {"inflight": 2, "gather": "share"},
            ),
        ),
        "pipeline.worker_bound": (
            Advice("more games_per_worker than {games_per_worker} or more workers"),
            Advice("gather=first (fire as soon as the server is free)", {"gather": "first"}),
        ),
        "pipeline.one_batch": (
            Advice("gather=share (the clients take turns in inflight groups)", {"gather": "share"}),
            Advice("more games_per_worker than {games_per_worker} (enough requests for {inflight} batches at once)"),
        ),
        "pipeline.server_bound": "more server_threads or inflight where cores are free, device=cuda",
        "small_batches": "more workers, more leaves per search or a longer timeout_ms",
        "gpu_thrash": "share one net per GPU: backend=server batches every worker's requests",
    },
    limits=(FORWARD,),
    # harness tune: what relieves a limit (workers search, the server evaluates, main runs
    # everything in the sequential and threads backends)
    relieves={
        "small_batches": (
            Move("backend", "server"),
            Move("leaves", "up"),
            Move("games_per_worker", "up"),
            Move("workers", "up", adds_work=True),
        ),
        "server": (
            Move("max_batch", "up"),
            Move("inflight", "up", adds_work=True),
            Move("server_threads", "up", adds_work=True),
        ),
        "workers": (Move("backend", "server"), Move("leaves", "up"), Move("workers", "up", adds_work=True)),
        "main": (Move("backend", "server"), Move("backend", "processes")),
        "gil_bound": (Move("backend", "server"), Move("backend", "processes")),
        "gpu_thrash": (Move("backend", "server"),),
    },
)

SUITE = Suite(
    name="selfplay",
    description="AlphaZero-style Connect Four self-play: batched MCTS, PyTorch net, inference server",
    params=Params,
    run=run,
    resources=resources,
    vocabulary=VOCABULARY,
    requires=("torch",),
    extra="selfplay",
)
