"""Calibration workloads: CPU spin in worker processes, and IPC round-trip latency.

`spin` is the yardstick other cells are normalised against (same machine, same run), and
its `slowdown` and `fail` knobs let tests drive the runner's measurement and failure paths
with real cells.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.probe import Probe, Rate, Reference, Resources, Suite, Vocabulary, resolve_workers


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["spin", "pingpong"] = Field("spin", description="CPU-bound units, or IPC round trips")
    workers: int = Field(1, ge=0, description="worker processes for spin (0 = one per core)")
    unit_size: int = Field(
        20_000, ge=1, le=10**9, description="loop steps per work unit", json_schema_extra={"unit": "steps"}
    )
    slowdown: float = Field(1.0, gt=0, le=1000, description="multiplies the work per unit (planted regressions)")
    fail: Literal["none", "raise", "hang", "exit", "kill_worker", "segfault", "oom", "orphan"] = Field(
        "none",
        description="fault to inject after fail_after_s: raise, hang forever, exit non-zero, SIGKILL a worker, "
        "segfault (ctypes), oom (allocate past --memory-limit), orphan (a double-forked setsid grandchild)",
    )
    fail_after_s: float = Field(0.2, ge=0, description="when the fault fires", json_schema_extra={"unit": "s"})
    message_bytes: int = Field(
        64, ge=1, le=2**20, description="pingpong payload size", json_schema_extra={"unit": "bytes"}
    )


def run(params: Params, probe: Probe) -> None:
    if params.kind == "spin":
        from suites.synthetic.spin import run_spin

        run_spin(params, probe)
    else:
        from suites.synthetic.pingpong import run_pingpong

        run_pingpong(params, probe)


def resources(params: Params) -> Resources:
    return Resources(cpus=resolve_workers(params.workers) if params.kind == "spin" else 2)


VOCABULARY = Vocabulary(
    rates=(Rate("units"), Rate("round_trips")),
    # the yardstick: a healthy spin cell; one worker and default sizes are preferred
    reference=Reference(
        params={"kind": "spin", "slowdown": 1.0, "fail": "none"},
        metric="units_per_s",
        prefer={**Params().model_dump(mode="json"), "workers": 1},
    ),
)

SUITE = Suite(
    name="synthetic",
    description="calibration: CPU spin units/s in worker processes; IPC round-trip latency (Queue, Pipe, shm)",
    params=Params,
    run=run,
    resources=resources,
    vocabulary=VOCABULARY,
)
