"""A causal experiment's periods: one stretch of time with nothing or one group slowed, and
what was measured over it (harness.causal.experiment fills them in, harness.causal.rounds
reads them)."""

from __future__ import annotations

from dataclasses import dataclass, field

FREE = "(none)"  # the period with nothing slowed
CONTROL = "(control)"  # a sleeping process of the harness's, slowed like a group: the method's own effect


@dataclass
class Period:
    round: int
    group: str
    pids: int  # processes slowed
    started: float  # parent's monotonic clock
    started_wall: float = 0.0
    ended: float = 0.0
    ended_wall: float = 0.0
    child_started: float = 0.0  # the child's clock (the reports' and the proxy's)
    child_ended: float = 0.0
    rate: float | None = None  # between the first and last report of its measured window
    reports: int = 0  # reports of the throughput in its measured window
    # with an I/O proxy: the rate and reports through each tracking group's calls (the first: `rate`)
    rates: dict[str, float | None] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    stopped_s: float = 0.0
    slowed_s: float = 0.0
    cycles: int = 0
    fraction: float | None = None  # the share the group was held stopped (harness.causal.stopper.PhaseStats)
    # the share of its CPU the stops took from the group: in debt mode a stop of s seconds costs
    # a group that gets a share a of a CPU while runnable only a * s of running (harness.causal.rounds)
    dose: float | None = None
    cpu_cores: dict[str, float] = field(default_factory=dict)  # each group's CPU over the period
    # each group's time runnable but waiting for a CPU, per second of the period (the machine's crowding)
    queued_cores: dict[str, float] = field(default_factory=dict)
