"""A causal experiment's options and what it found: the periods, each group's sensitivity,
and the summaries the report reads (harness.causal.experiment fills them in)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from harness.causal.sensitivity import Sensitivity

FREE = "(none)"  # the period with nothing slowed
CONTROL = "(control)"  # a sleeping process of the harness's, slowed like a group: the method's own effect
MIN_CPU_CORES = 0.05  # a group using less with nothing slowed has no CPU share worth comparing


@dataclass
class CausalOptions:
    """The experiment's layout; the defaults are measured in docs/benchmarks.md ("Causal profile")."""

    fraction: float = 0.5  # share of its time (duty) or busy time (debt) a slowed group is held stopped
    mode: str = "debt"  # debt: each process stopped for what its CPU owes; duty: the group, f of every cycle
    cycle_s: float = 0.02  # one stop plus one run
    period_s: float = (
        0.5  # one period: short periods, many rounds (the machine's noise is as large at 0.25 s as at 4 s)
    )
    settle_s: float = 0.1  # the first part of a period left out of its rate
    sample_s: float = 0.05  # the cell's probe writes its counters this often
    budget_s: float = 180.0  # the whole experiment, from launch
    width: float = 0.15  # stop once every interval is at most +- this
    warmup_s: float = 0.0  # at least this long from launch before the groups are read (--warmup)
    warmup_max_s: float = 120.0  # launch to settled rate, at most
    control: bool = False  # slow a sleeping process of the harness's too: what slowing alone does
    io_group: str | None = None  # count this group's read/write calls as the throughput (--io-counter)
    start_timeout_s: float = 180.0
    seed: int | None = None


@dataclass
class Period:
    round: int
    group: str
    pids: int  # processes slowed
    started: float  # parent's monotonic clock
    started_wall: float = 0.0
    ended: float = 0.0
    ended_wall: float = 0.0
    rate: float | None = None
    stopped_s: float = 0.0
    slowed_s: float = 0.0
    cycles: int = 0
    fraction: float | None = None  # the share the group was held stopped (harness.causal.stopper.PhaseStats)
    cpu_cores: dict[str, float] = field(default_factory=dict)  # each group's CPU over the period


@dataclass
class CausalResult:
    counter: str | None
    groups: dict[str, list[int]]
    commands: dict[str, str]
    periods: list[Period]
    sensitivities: list[Sensitivity]
    rounds: int
    reason: str  # why it ended
    wall_s: float
    launch_s: float
    warmup_s: float
    stopper_cpu_s: float
    harness_cpu_s: float
    options: CausalOptions
    waits: list[dict[str, Any]] = field(default_factory=list)  # harness.watch.waits.by_role, free periods
    io_check: dict[str, Any] | None = None  # --io-counter against the program's own counter
    idle: list[str] = field(default_factory=list)  # groups that used no CPU (debt mode: never stopped, not measured)

    def free_rate(self) -> float | None:
        rates = sorted(p.rate for p in self.periods if p.group == FREE and p.rate)
        return rates[len(rates) // 2] if rates else None

    def idle_free_periods(self) -> tuple[int, int]:
        """(free periods that counted nothing, free periods): a program that works in phases
        longer than a period (a PPO's rollout, then its update) counts nothing in some."""
        free = [p for p in self.periods if p.group == FREE and p.ended]
        return sum(1 for p in free if not p.rate), len(free)

    def utilisation(self) -> dict[str, float]:
        """Each group's median CPU (cores) over the periods nothing was slowed."""
        out = {}
        for name in self.groups:
            values = sorted(p.cpu_cores[name] for p in self.periods if p.group == FREE and name in p.cpu_cores)
            if values:
                out[name] = values[len(values) // 2]
        return out

    def achieved_fraction(self) -> dict[str, float]:
        out = {}
        for name in self.groups:
            values = sorted(f for p in self.periods if p.group == name and (f := p.fraction) is not None)
            if values:
                out[name] = values[len(values) // 2]
        return out

    def cpu_kept(self) -> dict[str, float]:
        """Each group's CPU in its slowed periods over the mean of the free periods either
        side (median over rounds): a CPU-bound group stopped f of the time should keep about
        1 - f; one that keeps much more had its stops given back by the scheduler (more
        runnable threads than cores), and its sensitivity understates what faster code buys."""
        out = {}
        for name in self.groups:
            ratios = sorted(
                p.cpu_cores[name] / free
                for a, p, b in zip(self.periods, self.periods[1:], self.periods[2:], strict=False)
                if p.group == name and a.group == FREE and b.group == FREE and name in p.cpu_cores
                and (free := (a.cpu_cores.get(name, 0.0) + b.cpu_cores.get(name, 0.0)) / 2) >= MIN_CPU_CORES
            )  # fmt: skip
            if ratios:
                out[name] = ratios[len(ratios) // 2]
        return out

    def to_json(self) -> dict[str, Any]:
        experiment_s = max(self.wall_s - self.launch_s - self.warmup_s, 1e-9)
        return {
            "counter": self.counter,
            "groups": self.groups,
            "commands": self.commands,
            "rounds": self.rounds,
            "reason": self.reason,
            "wall_s": self.wall_s,
            "launch_s": self.launch_s,
            "warmup_s": self.warmup_s,
            "free_rate": self.free_rate(),
            "idle_free_periods": list(self.idle_free_periods()),
            "utilisation_cores": self.utilisation(),
            "achieved_fraction": self.achieved_fraction(),
            "cpu_kept": self.cpu_kept(),
            "sensitivity": [s.to_json() for s in self.sensitivities],
            "cost": {
                "stopper_cpu_s": self.stopper_cpu_s,
                "stopper_cpu_pct": 100.0 * self.stopper_cpu_s / experiment_s,
                "harness_cpu_s": self.harness_cpu_s,
                "harness_cpu_pct": 100.0 * self.harness_cpu_s / experiment_s,
            },
            "options": asdict(self.options),
            "waits": self.waits,
            "io_check": self.io_check,
            "idle": self.idle,
            "throughput": f"read+write calls of {self.options.io_group}" if self.options.io_group else self.counter,
            "periods": [asdict(p) for p in self.periods],
        }
