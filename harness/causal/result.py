"""A causal experiment's options and what it found: the periods, each group's sensitivity
and verdict, and the summaries the report reads (harness.causal.experiment fills them in;
the verdicts are computed here, once, from the evidence: harness.causal.verdicts)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from harness.causal.periods import FREE, Period
from harness.causal.rounds import crowding, through_itself
from harness.causal.sensitivity import Sensitivity
from harness.causal.verdicts import Evidence, Judgement, experiment_caveats, judge

MIN_CPU_CORES = 0.05  # a group using less with nothing slowed has no CPU share worth comparing


@dataclass
class CausalOptions:
    """The experiment's layout; the defaults are measured in docs/benchmarks.md ("Causal profile")."""

    fraction: float = 0.5  # share of its time (duty) or busy time (debt) a slowed group is held stopped
    mode: str = "debt"  # debt: each process stopped for what its CPU owes; duty: the group, f of every cycle
    cycle_s: float = 0.02  # one stop plus one run
    # the shortest period (Coz's ExperimentMinTime): short periods, many rounds (the machine's noise is as
    # large at 0.25 s as at 4 s); longer where the program reports too seldom for it (harness.causal.cadence)
    period_s: float = 0.5
    settle_s: float = 0.1  # the first part of a period left out of its rate
    sample_s: float = 0.05  # the cell's probe writes its counters this often
    budget_s: float = 180.0  # the whole experiment, from launch
    width: float = 0.15  # stop once every interval is at most +- this
    # the readings the caller acts on: stop once no group still measured could settle into one in the
    # budget left (harness.causal.sensitivity.could_settle); empty: spend the budget (harness causal)
    futile_for: tuple[str, ...] = ()
    warmup_s: float = 0.0  # at least this long from launch before the groups are read (--warmup)
    warmup_max_s: float = 120.0  # launch to settled rate, at most
    control: bool = False  # slow a sleeping process of the harness's too: what slowing alone does
    io_group: str | None = None  # count this group's read/write calls as the throughput (--io-counter)
    start_timeout_s: float = 180.0
    seed: int | None = None


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
    # the I/O proxy, when one counted the throughput: {"group", "chosen" (user / auto), "tracking", "halves"}
    proxy: dict[str, Any] | None = None
    idle: list[str] = field(default_factory=list)  # groups that used no CPU (debt mode: never stopped, not measured)
    lost: dict[str, tuple[int, int]] = field(default_factory=dict)  # rounds without an observation, rounds
    # the program's cadence and the periods it asked for: {"cadence_s", "period_s" (each round's), "plan"}
    cadence: dict[str, Any] = field(default_factory=dict)
    reports: list[tuple[float, float]] = field(default_factory=list)  # the throughput's reports (child clock, count)

    def free_rate(self) -> float | None:
        rates = sorted(p.rate for p in self.periods if p.group == FREE and p.rate)
        return rates[len(rates) // 2] if rates else None

    def idle_free_periods(self) -> tuple[int, int]:
        """(free periods that saw no report, free periods): a program that works in phases
        longer than a period (a PPO's rollout, then its update) reports nothing in some."""
        free = [p for p in self.periods if p.group == FREE and p.ended]
        return sum(1 for p in free if not p.reports), len(free)

    def utilisation(self) -> dict[str, float]:
        """Each group's median CPU (cores) over the periods nothing was slowed."""
        out = {}
        for name in self.groups:
            values = sorted(p.cpu_cores[name] for p in self.periods if p.group == FREE and name in p.cpu_cores)
            if values:
                out[name] = values[len(values) // 2]
        return out

    def _slowed_median(self, field_name: str) -> dict[str, float]:
        """Each group's median of a field over its slowed periods (the upper median)."""
        out = {}
        for name in self.groups:
            values = sorted(v for p in self.periods if p.group == name and (v := getattr(p, field_name)) is not None)
            if values:
                out[name] = values[len(values) // 2]
        return out

    def achieved_fraction(self) -> dict[str, float]:
        """Each group's median share held stopped (the stopper's measure)."""
        return self._slowed_median("fraction")

    def doses(self) -> dict[str, float]:
        """Each group's median dose: the share of its CPU its stops took (harness.causal.rounds)."""
        return self._slowed_median("dose")

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

    def waiting(self) -> dict[str, float]:
        """The share of its time each group waits on another process (median over its
        processes, the strongest edge): a group that waits has slack to catch up in."""
        out: dict[str, float] = {}
        for edge in self.waits:
            if edge.get("peers"):
                out[edge["waiter"]] = max(out.get(edge["waiter"], 0.0), edge["blocked"]["median"])
        return out

    def evidence(self) -> Evidence:
        return Evidence(
            fraction=self.options.fraction,
            width=self.options.width,
            free_without_progress=self.idle_free_periods(),
            proxy_drifted=bool(self.proxy and self.proxy.get("drifted")),
            utilisation=self.utilisation(),
            held=self.achieved_fraction(),
            kept=self.cpu_kept(),
            waiting=self.waiting(),
            lost=self.lost,
            dose=self.doses(),
            crowding=crowding(self.periods),
            through_itself=frozenset(through_itself(self.periods)),
        )

    def judgements(self) -> list[Judgement]:
        return judge(self.sensitivities, self.idle, self.evidence())

    def to_json(self) -> dict[str, Any]:
        experiment_s = max(self.wall_s - self.launch_s - self.warmup_s, 1e-9)
        judged = {j.group: j for j in self.judgements()}
        sensitivity = []
        for s in self.sensitivities:
            j = judged.pop(s.group)
            sensitivity.append({**s.to_json(), "verdict": j.verdict, "reason": j.reason})
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
            "dose": self.doses(),
            "crowding": crowding(self.periods),
            "sensitivity": sensitivity,
            "unmeasured": [j.to_json() for j in judged.values()],
            "caveats": experiment_caveats(self.evidence()),
            "lost_rounds": {g: list(v) for g, v in self.lost.items()},
            "cost": {
                "stopper_cpu_s": self.stopper_cpu_s,
                "stopper_cpu_pct": 100.0 * self.stopper_cpu_s / experiment_s,
                "harness_cpu_s": self.harness_cpu_s,
                "harness_cpu_pct": 100.0 * self.harness_cpu_s / experiment_s,
            },
            "options": asdict(self.options),
            "waits": self.waits,
            "proxy": self.proxy,
            "idle": self.idle,
            "cadence": self.cadence,
            "throughput": f"read+write calls of {self.proxy['group']}" if self.proxy else self.counter,
            "periods": [asdict(p) for p in self.periods],
            "reports": [list(r) for r in self.reports],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CausalResult:
        """A result rebuilt from causal.json (its sensitivities recomputed by the caller from
        the periods, harness.causal.rounds): the recorded experiments the tests replay."""
        fields = set(CausalOptions.__dataclass_fields__)
        return cls(
            data.get("counter"), {g: list(p) for g, p in data["groups"].items()}, data.get("commands", {}),
            [Period(**p) for p in data["periods"]], [], data["rounds"], data["reason"], data["wall_s"],
            data["launch_s"], data["warmup_s"], data["cost"]["stopper_cpu_s"], data["cost"]["harness_cpu_s"],
            CausalOptions(**{k: v for k, v in data["options"].items() if k in fields}), data.get("waits") or [],
            data.get("proxy"), list(data.get("idle") or []), {g: tuple(v) for g, v in (data.get("lost_rounds") or {}).items()},
            data.get("cadence") or {}, [tuple(r) for r in data.get("reports") or []],
        )  # fmt: skip
