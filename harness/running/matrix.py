"""Sweep specs (TOML + CLI flags) expanded into Cells.

A spec's top-level keys are defaults for the whole sweep; each `[[matrix]]` entry names a
suite and its params, where a list value is an axis. Flags override the spec. Each Cell
is validated against its suite's Params before anything runs, and carries a stable id
(a hash of the suite and its full params) that `--resume` uses to skip finished work.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.cell.targets import DEFAULT_CAP_S as DEFAULT_TARGET_CAP_S
from harness.cell.targets import Target
from harness.errors import UserError
from harness.model.params import validate
from harness.model.registry import get_suite, ready_suite
from harness.program import COMMAND_PARAM
from harness.program import NAME as PROGRAM_SUITE

DEFAULT_DEADLINE_SLACK_S = 60.0
DEFAULT_DURATION_S = 5.0
DEFAULT_STEADY_MAX_S = 10.0


class Budget(BaseModel):
    """How long each cell runs; any of these may be set at the top or per entry."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    duration: float | None = Field(
        None, gt=0, description="measured seconds per cell (with a target: the most it may run)"
    )
    warmup: float | None = Field(
        None, ge=0, description="seconds excluded from rates: the floor of an automatic warm-up, or all of it"
    )
    steady: Literal["auto", "off"] | None = Field(
        None, description="auto: measure once the rate has settled (warmup is the floor); off: fixed warmup"
    )
    steady_max: float | None = Field(None, gt=0, description="the most an automatic warm-up may last, seconds")
    target: str | None = Field(None, description="quality target METRIC<=V or METRIC>=V: run until reached")
    target_every: float | None = Field(None, gt=0, description="measured seconds between quality checks")
    work: int | None = Field(None, ge=0, description="fixed work units instead of a duration")
    repeats: int | None = Field(None, ge=1, le=1000)
    timeout: float | None = Field(None, gt=0, description="deadline per cell, seconds")
    memory_limit_mb: float | None = Field(
        None,
        ge=16,
        description="memory of a cell's whole process tree (PSS summed), MB: past it a watchdog ends the cell",
    )
    log_cap_mb: float | None = Field(
        None, gt=0, description="the most a cell's log keeps, MB (its last part; default 16)"
    )


class Entry(Budget):
    suite: str
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _program(cls, data: Any) -> Any:
        """`command = "python train.py --n {workers}"` in place of `suite`: your program, a
        cell of the harness's own suite (harness.program) whose params fill its placeholders."""
        if isinstance(data, dict) and "command" in data:
            data = dict(data)
            command = data.pop("command")
            if data.setdefault("suite", PROGRAM_SUITE) != PROGRAM_SUITE:
                raise ValueError(f"an entry with a command runs that program; drop suite = {data['suite']!r}")
            data["params"] = {**(data.get("params") or {}), COMMAND_PARAM: command}
        return data


class Spec(Budget):
    label: str | None = None
    matrix: list[Entry] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _top_level_program(cls, data: Any) -> Any:
        """A spec that only runs your program: top-level `command = "..."` and `[params]`."""
        if isinstance(data, dict) and "command" in data:
            data = dict(data)
            entry = {"command": data.pop("command"), "params": data.pop("params", {})}
            data["matrix"] = [*(data.get("matrix") or []), entry]
        return data


@dataclass(frozen=True)
class Cell:
    """One point of the matrix. `params` are complete (defaults filled in) and JSON-able."""

    suite: str
    params: dict[str, Any]
    duration: float | None
    warmup: float
    work: int | None
    repeats: int
    timeout: float
    id: str = field(default="")
    memory_limit_mb: float | None = None  # PSS of the cell's tree; the runner's watchdog enforces it
    steady: str = "auto"  # auto warm-up (warmup is its floor) or off (warmup is fixed)
    steady_max: float = DEFAULT_STEADY_MAX_S
    target: str | None = None  # quality target: the cell runs until it is met or `duration` passes
    target_every: float | None = None
    log_cap_mb: float | None = None  # the most its log keeps (the tail); None: the runner's default
    # the timeout came from the flags, not --timeout: it follows a measured window that opens
    # late (harness.running.deadline)
    deadline_follows_window: bool = False

    def budget(self) -> dict[str, Any]:
        """What a record keeps of how the cell ran."""
        out = {"duration": self.duration, "warmup": self.warmup, "work": self.work, "timeout": self.timeout}
        if self.duration is not None and self.work is None and self.target is None:
            out.update(steady=self.steady, steady_max=self.steady_max if self.steady == "auto" else None)
        if self.target is not None:
            out.update(target=self.target, target_every=self.target_every)
        return out

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Cell:
        return cls(**data)


def cell_id(suite: str, params: dict[str, Any]) -> str:
    blob = json.dumps({"suite": suite, "params": params}, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:10]


def load_spec(path: Path) -> Spec:
    try:
        text = path.read_text()
    except OSError as exc:
        raise UserError(f"cannot read sweep spec {path}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}") from None
    try:
        return Spec.model_validate(data)
    except ValidationError as exc:
        raise UserError(spec_error(str(path), exc)) from None


BUDGET_KEYS = (
    "duration", "warmup", "steady", "steady_max", "target", "target_every", "work", "repeats", "timeout",
    "memory_limit_mb", "log_cap_mb",
)  # fmt: skip


def spec_error(source: str, exc: ValidationError) -> str:
    """Every problem with its key, the value given and what is allowed."""
    problems = []
    for err in exc.errors():
        key = ".".join(map(str, err["loc"])) or "(spec)"
        given = f" (got {err['input']!r})" if err["type"] not in ("missing", "extra_forbidden") else ""
        problems.append(f"{key}: {err['msg']}{given}")
    return (
        f"{source}: {'; '.join(problems)}. Top-level keys: label, {', '.join(BUDGET_KEYS)}, matrix (or command "
        "and params: your program); each [[matrix]] entry: suite (or command), params and the same budget keys"
    )


@dataclass
class Overrides:
    """What the command line says; every field left None keeps the spec's value."""

    suite: str | None = None
    axes: dict[str, list[Any]] = field(default_factory=dict)
    # values for a suite's role params ("workers", "backend"), which its vocabulary names
    roles: dict[str, list[Any]] = field(default_factory=dict)
    duration: float | None = None
    warmup: float | None = None
    steady: str | None = None
    steady_max: float | None = None
    target: str | None = None
    target_every: float | None = None
    work: int | None = None
    repeats: int | None = None
    timeout: float | None = None
    label: str | None = None
    memory_limit_mb: float | None = None
    log_cap_mb: float | None = None


def apply_overrides(spec: Spec, ov: Overrides) -> Spec:
    entries = list(spec.matrix)
    if ov.suite is not None:
        get_suite(ov.suite)  # unknown suite -> UserError naming the available ones
        entries = [e for e in entries if e.suite == ov.suite] or [Entry(suite=ov.suite)]
    if not entries:
        raise UserError("nothing to run: give a spec with [[matrix]] entries, or --suite NAME")
    budget = {k: getattr(ov, k) for k in BUDGET_KEYS}
    budget = {k: v for k, v in budget.items() if v is not None}
    if ov.target is not None and ov.work is None:
        budget["work"] = None  # a target on the command line replaces the spec's fixed work
    new_entries = []
    for entry in entries:
        params = dict(entry.params)
        params.update(ov.axes)
        params.update(_role_axes(entry.suite, ov.roles))
        new_entries.append({**entry.model_dump(), "params": params, **budget})
    top = {k: v for k, v in budget.items()}
    if ov.label is not None:
        top["label"] = ov.label
    try:  # validated again: command-line values obey the same bounds as the spec's
        return Spec.model_validate({**spec.model_dump(), "matrix": new_entries, **top})
    except ValidationError as exc:
        raise UserError(spec_error("command line", exc)) from None


def _role_axes(suite: str, roles: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """--workers/--backend values under the suite's own param names (its vocabulary)."""
    words = get_suite(suite).words
    out = {}
    for role, values in roles.items():
        key = getattr(words, role)
        if key is None:
            raise UserError(f"--{role}: suite {suite!r} has no {role} param (see harness suites)")
        out[key] = values
    return out


def _axes(params: dict[str, Any]) -> list[dict[str, Any]]:
    keys = list(params)
    lists = [v if isinstance(v, list) else [v] for v in params.values()]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*lists)]


def expand(spec: Spec) -> list[Cell]:
    """Every Cell of the sweep, validated, in spec order, duplicates removed."""
    cells: list[Cell] = []
    seen: set[str] = set()
    for entry in spec.matrix:
        suite = ready_suite(entry.suite)  # a missing extra stops the sweep before anything runs
        duration = _pick(entry.duration, spec.duration, None)
        warmup = _pick(entry.warmup, spec.warmup, 0.0)
        work = _pick(entry.work, spec.work, None)
        target = _pick(entry.target, spec.target, None)
        if target is not None:
            _check_target(entry.suite, target, work)
            duration = duration or DEFAULT_TARGET_CAP_S
        if duration is None and work is None:
            duration = DEFAULT_DURATION_S
        if work is not None:
            duration = None
        steady = _pick(entry.steady, spec.steady, "auto")
        steady_max = _pick(entry.steady_max, spec.steady_max, DEFAULT_STEADY_MAX_S)
        settling = steady_max if steady == "auto" and work is None and target is None else 0.0
        repeats = _pick(entry.repeats, spec.repeats, 1)
        deadline = (duration or 0.0) + max(warmup, settling) + DEFAULT_DEADLINE_SLACK_S
        timeout = _pick(entry.timeout, spec.timeout, deadline)
        follows = entry.timeout is None and spec.timeout is None and duration is not None
        memory = _pick(entry.memory_limit_mb, spec.memory_limit_mb, None)
        every = _pick(entry.target_every, spec.target_every, None)
        log_cap = _pick(entry.log_cap_mb, spec.log_cap_mb, None)
        for raw in _axes(entry.params):
            params = validate(entry.suite, suite.params, raw).model_dump(mode="json")
            cid = cell_id(entry.suite, params)
            if cid in seen:
                continue
            seen.add(cid)
            cells.append(
                Cell(entry.suite, params, duration, warmup, work, repeats, timeout, cid, memory, steady, steady_max,
                     target, every, log_cap, follows)
            )  # fmt: skip
    return cells


def _check_target(suite: str, text: str, work: int | None) -> None:
    """A target names a quality metric the suite declares, the way it is better, a number."""
    try:
        target = Target.parse(text)
    except ValueError as exc:
        raise UserError(f"--target {exc}") from None
    if work is not None:
        raise UserError(f"--target {text}: a target and --work exclude each other (a target runs until it is met)")
    words = get_suite(suite).words
    quality = words.quality_metric(target.metric)
    if quality is None and words.open_quality:
        return  # a program's logged value (harness.program): the target's comparison says which way is better
    if quality is None:
        declared = ", ".join(f"{q.metric} ({q.better} is better)" for q in words.quality) or "none"
        raise UserError(
            f"--target {text}: suite {suite!r} declares no quality metric {target.metric!r}; it declares: {declared}"
        )
    if quality.better != target.better:
        op = "<=" if quality.better == "lower" else ">="
        raise UserError(f"--target {text}: {target.metric} is better {quality.better}; write {target.metric}{op}VALUE")


def _pick(*values: Any) -> Any:
    for value in values:
        if value is not None:
            return value
    return None


def single_cell(command: str, suite: str, sets: list[str] | None, **budget: Any) -> tuple[Spec, Cell]:
    """The one cell `harness run` / `harness profile` asks for: `--set` values must be
    single (a list is a sweep), budget flags as in a sweep (None keeps the default)."""
    from harness.model.params import parse_assignments

    get_suite(suite)
    axes = parse_assignments(sets)
    lists = [k for k, v in axes.items() if len(v) > 1]
    if lists:
        raise UserError(
            f"harness {command} takes one value per key ({', '.join(lists)} has several); use harness sweep for lists"
        )
    overrides = Overrides(
        suite=suite, axes={k: v[0] for k, v in axes.items()}, label=f"{command}-{suite}", repeats=1, **budget
    )
    spec = apply_overrides(Spec(), overrides)
    (cell,) = expand(spec)
    return spec, cell
