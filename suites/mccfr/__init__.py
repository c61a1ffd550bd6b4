"""MCCFR suite: external-sampling MCCFR on Kuhn, Leduc and a scalable Leduc.

Importing this package is cheap (pydantic only); `run` imports numpy, numba and the
solver when a cell starts.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.probe import Move, Probe, Quality, Rate, Resources, Suite, Vocabulary, resolve_workers
from suites.mccfr.backends import BACKENDS


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

    game: Literal["kuhn", "leduc", "leduc_variant"] = Field(
        "leduc", description="kuhn, leduc (OpenSpiel's leduc_poker) or leduc_variant (ranks/suits/raises)"
    )
    backend: BACKENDS.field("sequential", "where iterations run (ray: Ray actors; needs the [ray] extra)")
    workers: int = Field(1, ge=0, description="worker threads/processes/actors (0 = one per core); sequential uses one")
    batch_size: int = Field(
        100,
        ge=1,
        description="iterations per batch, split over the workers; state syncs once per batch",
        json_schema_extra={"unit": "iterations"},
    )
    sync: Literal["delta", "full", "shared"] = Field(
        "delta",
        description="how worker state travels: delta (changed rows), full (whole state), "
        "shared (shared-memory tables updated in place)",
    )
    staleness: int = Field(
        1,
        ge=0,
        le=8,
        description="batches a worker may run ahead of the merge: 0 = a barrier every batch "
        "(workers wait while the main process merges); 1 = the next batch runs while the last "
        "one merges; more absorbs slow workers at the cost of staler tables",
        json_schema_extra={"unit": "batches"},
    )
    seed: int = Field(0, ge=0, description="random seed; a run is deterministic per seed, worker count and staleness")
    exploitability_every: int = Field(
        0,
        ge=0,
        description="exploitability checkpoint into the series every K iterations (0 = only at the end)",
        json_schema_extra={"unit": "iterations"},
    )
    ranks: int = Field(13, ge=2, le=64, description="leduc_variant only: card ranks")
    suits: int = Field(4, ge=1, le=16, description="leduc_variant only: suits per rank")
    raises: int = Field(2, ge=1, le=6, description="leduc_variant only: raises allowed per betting round")
    start_method: Literal["auto", "fork", "spawn", "forkserver"] = Field(
        "auto", description="processes only: auto = fork unless torch is loaded, then spawn"
    )


def _resources(params: Params) -> Resources:
    if params.backend == "sequential":
        return Resources(cpus=1)
    return Resources(cpus=min(resolve_workers(params.workers), params.batch_size))


def run(params: Any, probe: Probe) -> None:
    from suites.mccfr.driver import run_mccfr

    run_mccfr(params, probe)


VOCABULARY = Vocabulary(
    rates=(Rate("iterations"),),
    # distance from equilibrium: deterministic per seed, workers and staleness at a fixed
    # number of iterations, so a baseline's worst value bounds it there
    quality=(
        Quality("nash_conv", "lower", bound_at_fixed_work=True),
        Quality("exploitability", "lower", bound_at_fixed_work=True),
    ),
    metrics={"exploitability_s": "lower", "sync_share": "lower"},
    report=("exploitability", "nash_conv"),
    # harness tune: what relieves a limit (workers run iterations, the main process merges their state)
    relieves={
        "serialization": (Move("sync", "delta"), Move("sync", "shared"), Move("batch_size", "up")),
        "main": (Move("sync", "delta"), Move("batch_size", "up"), Move("staleness", "up")),
        "workers": (Move("workers", "up", adds_work=True), Move("staleness", "up")),
    },
)

SUITE = Suite(
    name="mccfr",
    description="external-sampling MCCFR on Kuhn/Leduc/large Leduc; sequential, threads, processes, ray",
    params=Params,
    run=run,
    resources=_resources,
    vocabulary=VOCABULARY,
    requires=("numba",),
    extra="mccfr",
)

__all__ = ["Params", "SUITE", "run"]
