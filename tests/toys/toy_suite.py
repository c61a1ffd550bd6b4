"""A toy suite written outside the `suites` package, to show the suite contract is all a
suite needs: registered with HARNESS_SUITES="toy=tests.toys.toy_suite:SUITE", it appears in
`harness suites`, runs in sweeps, gets a scaling chart and is diagnosed, with no other
file edited.

Its lanes are threads that each finish `widgets`, one per `unit_ms` of sleep; every other
lane adds `contention` x unit_ms to each widget (a shared resource whose cost really grows
with the worker count), so with contention > 1/1 more lanes make fewer widgets per second.
Sleeping keeps the toy off the CPU: tests run it on a busy 2-core machine.
"""

from __future__ import annotations

import threading
import time

from pydantic import BaseModel, ConfigDict, Field

from harness.probe import Probe, Rate, Suite, Vocabulary


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lanes: int = Field(1, ge=1, le=64, description="parallel lanes (threads): the worker count")
    unit_ms: float = Field(5.0, gt=0, description="time one widget takes alone", json_schema_extra={"unit": "ms"})
    contention: float = Field(0.0, ge=0, description="extra share of unit_ms per other lane, per widget")


def run(params: Params, probe: Probe) -> None:
    cost_s = params.unit_ms / 1000 * (1 + params.contention * (params.lanes - 1))
    stop = threading.Event()

    def lane() -> None:
        while not stop.is_set():
            time.sleep(cost_s)
            probe.count("widgets")

    threads = [threading.Thread(target=lane, daemon=True) for _ in range(params.lanes)]
    for thread in threads:
        thread.start()
    probe.phase("warmup")
    try:
        while not probe.should_stop():
            time.sleep(0.01)
    finally:
        stop.set()
        for thread in threads:
            thread.join()


SUITE = Suite(
    name="toy",
    description="toy: sleeping lanes whose per-widget cost grows with the lane count",
    params=Params,
    run=run,
    vocabulary=Vocabulary(rates=(Rate("widgets"),), workers="lanes"),
)

# The toy again, needing a module no machine has: a suite whose extra is not installed.
NEEDY = Suite(
    name="needy",
    description="toy that needs a module that is not installed",
    params=Params,
    run=run,
    vocabulary=Vocabulary(rates=(Rate("widgets"),), workers="lanes"),
    requires=("harness_test_module_that_is_not_installed",),
    extra="needy",
)
