"""A tune's options, its trail and its outcome: what tune.json holds, written whole after
every step and trial so that a tune stopped by Ctrl-C keeps what it learned, and read back
by `harness tune --resume`."""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.tune.space import Knob

TUNE_JSON = "tune.json"
TIME_TO_TARGET = "time-to-target"  # --objective: the time to a quality target, lower is better
SCHEMA = 1


@dataclass
class TuneOptions:
    budget_s: float = 1200.0  # the whole tune, evidence, A/Bs and the final A/B included
    step_alpha: float = 0.2  # each challenger's A/B (4 blocks can decide); the final one is final_alpha
    final_alpha: float = 0.05
    min_gain: float = 0.03  # the edge of every A/B: adopted when its interval lies above 1 + this, dropped below
    duel_budget_s: float = 150.0  # one challenger's A/B at most
    evidence_s: float = 8.0  # the incumbent's measured cell
    screen_s: float = 2.0  # each screen reading's measured window (a program reporting in bursts: evidence_s)
    causal_budget_s: float = 60.0  # its causal experiment (0: none)
    objective: str | None = None  # a rate counter (default: the suite's headline), or TIME_TO_TARGET
    seed: int | None = None
    target: str | None = None  # with TIME_TO_TARGET: the quality target each race runs to (METRIC<=V)
    target_every: float | None = None  # measured seconds between its checks (None: the probe's default)
    target_cap_s: float = 120.0  # the most one race run may take to reach it

    @property
    def races(self) -> bool:
        """Whether challengers are decided by races to the target (harness.tune.race), not sliced A/Bs."""
        return self.objective == TIME_TO_TARGET


@dataclass
class Trial:
    knob: str  # a joint move's knobs joined by "+"
    value: Any  # a joint move's: knob -> value
    why: str  # what the move relieves, or "every knob in turn"
    params: dict[str, Any]  # the challenger's knob values
    duel: dict[str, Any] | None = None  # harness.tune.duel.Duel.to_json()
    started_s: float = 0.0  # since the tune began
    screen: dict[str, Any] | None = None  # the screen that chose this value (harness.tune.screen.Screen.to_json())

    @property
    def decision(self) -> str | None:
        return self.duel["decision"] if self.duel else None

    @property
    def joint(self) -> bool:
        """Whether the trial moves several knobs at once (harness.tune.search.Tuner.survey)."""
        return isinstance(self.value, dict)

    def said(self) -> str:
        return move_said(self.knob, self.value)


def move_said(knob: str, value: Any) -> str:
    """A trial's move as the trail shows it: knob=value, or each knob a joint move sets."""
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in value.items())
    return f"{knob}={value}"


@dataclass
class Step:
    index: int
    incumbent: dict[str, Any]
    started_s: float
    limit: dict[str, Any] = field(default_factory=dict)  # harness.tune.bottleneck.Limit.to_json()
    rate: float | None = None  # the incumbent's measured headline (one reading, for the record)
    metric: str | None = None
    evidence_s: float = 0.0
    report_gap_s: float | None = None  # the incumbent's longest gap between progress reports (the A/B's slices)
    target_s: float | None = None  # with races: the start's time to the target, one run (None: missed)
    pilot_s: float | None = None  # that run's seconds from launch to end (the first guess of a race block: two)
    trials: list[Trial] = field(default_factory=list)
    adopted: int | None = None  # index of the trial that won
    seconds: float = 0.0
    # after single moves that all lost: the moves of two knobs read (harness.tune.search.Tuner.pair_survey),
    # or why none were: {"said": ..., "seconds": ..., "first_trial": the index of the first of them A/B'd
    # (where read)}; the trail and the conclusion say it
    pairs: dict[str, Any] | None = None
    causal_skipped: str | None = None  # why no causal experiment ran: the readings already pointed somewhere


@dataclass
class TuneState:
    suite: str
    fixed: dict[str, Any]  # params set with --set (not tuned)
    knobs: list[Knob]
    start: dict[str, Any]  # the knobs' starting values
    options: TuneOptions
    program: list[str] | None = None  # a -- CMD program's argv, placeholders unfilled
    progress: list[str] = field(default_factory=list)  # its --progress patterns (--resume reads them again)
    progress_files: list[str] = field(default_factory=list)  # its --progress-file globs
    best: dict[str, Any] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    elapsed_s: float = 0.0  # spent before this session (--resume) and in it
    final: dict[str, Any] | None = None  # the winner's A/B against the start
    state: str = "running"  # running | interrupted | finished
    ended_by: str = ""  # why the search ended: converged | budget
    conclusion: str = ""
    machine_limit: str | None = None
    scaling: dict[str, Any] | None = None
    plan: dict[str, Any] | None = None  # harness.tune.plan.Plan.to_json(), made before the search
    halving: dict[str, Any] | None = None  # a whole screen's rungs, readings and A/Bs (harness.tune.halving)
    sure: str = ""  # how sure the tune is of its winner: its A/Bs or readings against the runners-up

    def __post_init__(self) -> None:
        if not self.best:
            self.best = dict(self.start)

    def tried(self) -> set[str]:
        """Every challenger compared with an incumbent so far (its knob values, as a key)."""
        return {key_of(t.params) for s in self.steps for t in s.trials if t.duel is not None}

    def settings(self, values: dict[str, Any] | None = None) -> dict[str, Any]:
        """Every param this tune sets: the fixed ones and the knobs' values."""
        return {**self.fixed, **(values if values is not None else self.best)}

    def spec_snippet(self) -> str:
        """The winning settings as a sweep spec's matrix entry."""
        params = ", ".join(f"{k} = {_toml(v)}" for k, v in {**self.settings(), **self._reads()}.items())
        budget = ""
        if self.options.races and self.options.target:
            budget = f"\ntarget = {_toml(self.options.target)}\nduration = {self.options.target_cap_s!r}"
        if self.program is not None:
            return (
                f'command = {_toml(shlex.join(self.program))}\n\n[[matrix]]\nsuite = "command"\n'
                f"params = {{ {params} }}{budget}"
            )
        return f'[[matrix]]\nsuite = "{self.suite}"\nparams = {{ {params} }}{budget}'

    def command_line(self) -> str:
        """The winning settings as a harness command line (a sweep of that one cell; with
        its target and cap when the tune raced to one)."""
        sets = " ".join(f"--set {shlex.quote(f'{k}={v}')}" for k, v in self.settings().items() if k != "argv")
        if self.options.races and self.options.target:
            sets += f" --target {shlex.quote(self.options.target)} --duration {self.options.target_cap_s:g}"
        if self.program is not None:
            reads = [f"--progress {shlex.quote(p)}" for p in self.progress]
            reads += [f"--progress-file {shlex.quote(g)}" for g in self.progress_files]
            return " ".join(p for p in ["harness sweep", sets, *reads, "--", shlex.join(self.program)] if p)
        return f"harness sweep --suite {self.suite} {sets}".rstrip()

    def _reads(self) -> dict[str, str]:
        """A program's progress patterns and files as the command suite's params."""
        out = {}
        if self.progress:
            out["progress"] = "\n".join(self.progress)
        if self.progress_files:
            out["progress_files"] = "\n".join(self.progress_files)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "suite": self.suite,
            "fixed": self.fixed,
            "knobs": [asdict(k) for k in self.knobs],
            "start": self.start,
            "best": self.best,
            "options": asdict(self.options),
            "program": self.program,
            "progress": self.progress,
            "progress_files": self.progress_files,
            "steps": [asdict(s) for s in self.steps],
            "elapsed_s": self.elapsed_s,
            "final": self.final,
            "state": self.state,
            "ended_by": self.ended_by,
            "conclusion": self.conclusion,
            "machine_limit": self.machine_limit,
            "scaling": self.scaling,
            "plan": self.plan,
            "halving": self.halving,
            "sure": self.sure,
            "spec": self.spec_snippet(),
            "command": self.command_line(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TuneState:
        knobs = [
            Knob(k["name"], tuple(k["values"]), k["ordered"], k.get("group"), k.get("text", "")) for k in data["knobs"]
        ]
        steps = []
        for s in data.get("steps") or []:
            trials = [Trial(**t) for t in s.pop("trials", [])]
            steps.append(Step(**s, trials=trials))
        return cls(
            suite=data["suite"], fixed=data["fixed"], knobs=knobs, start=data["start"],
            options=TuneOptions(**data["options"]), program=data.get("program"), progress=data.get("progress") or [],
            progress_files=data.get("progress_files") or [], best=data["best"], steps=steps,
            elapsed_s=data.get("elapsed_s", 0.0), final=data.get("final"), state=data.get("state", "running"),
            ended_by=data.get("ended_by", ""),
            conclusion=data.get("conclusion", ""), machine_limit=data.get("machine_limit"), scaling=data.get("scaling"),
            plan=data.get("plan"), halving=data.get("halving"), sure=data.get("sure", ""),
        )  # fmt: skip


def key_of(values: dict[str, Any]) -> str:
    return ",".join(f"{k}={values[k]}" for k in sorted(values))


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'
