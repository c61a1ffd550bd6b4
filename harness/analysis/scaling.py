"""The Universal Scalability Law over a run's scaling groups, fitted once per view.

A scaling group is the cells of a run that differ only in their worker count
(RunView.scaling_groups). `fits(view)` fits the USL (harness.analysis.usl) to each group's
rate (RunView.rate: the one the run compares them by) the first time it is asked and keeps
the fits on the view, so the terminal, summary.md, summary.csv, report.html and
NEGATIVE_SCALING read the same numbers. A group whose rate failed its checks in some cell
(harness.runs.provenance) is not fitted: a curve through a doubted number would print the
doubt away. Lesser doubts (few reports, one rank of a job) ride along in `doubt`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.analysis import usl
from harness.model.numbers import readable
from harness.runs import provenance
from harness.runs.record import CellGroup
from harness.runs.view import RunView

Members = Sequence[tuple[int, CellGroup]]


@dataclass
class ScalingGroup:
    """One worker axis of a run and what the USL says of it."""

    suite: str
    key: str  # the suite's worker param
    params: dict[str, Any]  # what the group's cells share: every param but the worker count
    label: str  # the shared params that vary in the run (`backend=threads`), or ""
    rate: str | None
    members: list[tuple[int, CellGroup]]
    fit: usl.UslFit
    doubt: str | None = None  # notes of its cells' rates that do not stop the fit

    @property
    def cell_ids(self) -> list[str]:
        return [c.id for _, c in self.members]

    @property
    def name(self) -> str:
        return f"{self.suite} {self.label}".strip()


def fits(view: RunView) -> list[ScalingGroup]:
    """Every scaling group of the run with its fit, computed on the first call and kept on
    the view (`view.scaling`)."""
    if view.scaling is None:
        view.scaling = [fit_group(view, members) for members in view.scaling_groups()]
    return view.scaling


def of_cells(view: RunView, cell_ids: Sequence[str]) -> ScalingGroup | None:
    """The scaling group holding exactly these cells (a rule's group), or None."""
    wanted = set(cell_ids)
    return next((g for g in fits(view) if set(g.cell_ids) == wanted), None)


def of_suite(view: RunView, suite: str) -> list[ScalingGroup]:
    return [g for g in fits(view) if g.suite == suite]


def fit_group(view: RunView, members: Members, resamples: int = usl.RESAMPLES) -> ScalingGroup:
    """The USL of one group of cells that differ only in their worker count."""
    first = members[0][1]
    key = first.vocabulary.workers or "workers"
    shared = {k: v for k, v in first.params.items() if k != key}
    varying = view.suites[first.suite].varying if first.suite in view.suites else []
    label = " ".join(f"{p}={shared[p]}" for p in varying if p in shared)
    rate = view.rate([c for _, c in members])
    data: dict[int, list[float]] = {}
    for count, cell in members:
        data.setdefault(count, []).extend(cell.values(rate) if rate is not None else [])
    counts = sorted(data)
    refused, doubt = _doubt(members, rate) if rate is not None else ("no rate measured in these cells", None)
    if refused is not None:
        found = usl.UslFit(usl.REFUSED, counts, [len(data[c]) for c in counts], [], reason=refused)
    else:
        found = usl.fit(data, resamples=resamples, cores=view.cores)
    return ScalingGroup(first.suite, key, shared, label, rate, list(members), found, doubt)


def _doubt(members: Members, rate: str) -> tuple[str | None, str | None]:
    """What stands against the group's rate, as every verdict reads it (harness.runs.
    provenance.doubt, the view's `doubt`): why it may not be fitted at all (its check failed,
    its window held too few units: a curve through it would be a guess), and the doubt that
    rides along with a fit (few reports, an unchecked guess), and a torch.distributed job's
    one-rank note (harness.runs.provenance.cell_note)."""
    found = provenance.doubt(rate, [r for _, cell in members for r in cell.records])
    if found is not None and found.refuse:
        return f"{found.why}: a curve through it would be a guess", None
    ranks = {count: note for count, cell in members if (note := provenance.cell_note(cell.records))}
    ranks = {c: n for c, n in ranks.items() if "rank" in n}
    notes = ([found.why] if found is not None else []) + [f"{n} at {c} workers" for c, n in sorted(ranks.items())]
    return None, "; ".join(notes) or None


def _listed(counts: Sequence[int]) -> str:
    return ", ".join(map(str, counts))


def _number(value: float | None) -> str:
    return readable(value, 3)


def interval(found: usl.Interval, unit: str = "") -> str:
    """`0.12 [0.08-0.17]`, or the point alone with `(no interval)`."""
    unit = f" {unit}" if unit else ""
    if found.low is None or found.high is None:
        return f"{_number(found.value)}{unit} (no interval)"
    return f"{_number(found.value)} [{_number(found.low)}-{_number(found.high)}]{unit}"


def summary(group: ScalingGroup) -> str:
    """What the fit says in one phrase: sigma, kappa and the peak, or why there are none."""
    found = group.fit
    if not found.ok:
        return f"{found.status}: {found.reason}"
    assert found.sigma is not None and found.kappa is not None
    said = f"sigma {interval(found.sigma)}, kappa {interval(found.kappa)}; "
    if found.peak is not None and found.peak_rate is not None:
        said += f"peak at {interval(found.peak, 'workers')}, {interval(found.peak_rate, group.rate or '')}"
    else:
        said += f"no peak: {found.no_peak}"
    return said


def line(group: ScalingGroup) -> str:
    """One scaling group's line in the terminal and summary.md."""
    found = group.fit
    shape = f"{group.rate}"
    if found.counts:
        repeats = sorted(set(found.repeats)) or [0]
        each = f"{repeats[0]}" if len(repeats) == 1 else f"{repeats[0]}-{repeats[-1]}"
        shape += f" over {group.key} {_listed(found.counts)}, {each} repeat{'s' if repeats[-1] != 1 else ''}"
    text = f"USL {group.name} ({shape}): {summary(group)}"
    notes = list(found.warnings) if found.ok else []
    if group.doubt:
        notes.append(f"the rate carries doubts ({group.doubt})")
    return text + "".join(f"; warning: {n}" for n in notes)


def quote(group: ScalingGroup) -> str:
    """What NEGATIVE_SCALING adds to its hint: kappa and the peak, or why the USL says none."""
    found = group.fit
    if found.status == usl.TOO_FEW:
        return ""
    if not found.ok:
        return f"; the USL {found.status} ({found.reason})"
    assert found.kappa is not None
    said = f"; the USL puts kappa at {interval(found.kappa)}"
    if found.peak is not None:
        said += f" and the peak at {interval(found.peak, 'workers')}"
    else:
        said += f", no peak ({found.no_peak})"
    return said


COLUMNS = (
    "usl_status", "usl_reason", "usl_rate",
    "usl_sigma", "usl_sigma_low", "usl_sigma_high", "usl_kappa", "usl_kappa_low", "usl_kappa_high",
    "usl_peak_workers", "usl_peak_workers_low", "usl_peak_workers_high",
    "usl_peak_rate", "usl_peak_rate_low", "usl_peak_rate_high",
    "usl_fitted_rate", "usl_fitted_rate_low", "usl_fitted_rate_high",
)  # fmt: skip


_INTERVALS = (("sigma", "sigma"), ("kappa", "kappa"), ("peak", "peak_workers"), ("peak_rate", "peak_rate"))


def summary_columns(view: RunView) -> dict[str, dict[str, Any]]:
    """summary.csv's USL columns per cell id: its group's fit, and the fitted rate (with its
    band) at the cell's own worker count. Cells in no scaling group have none."""
    out: dict[str, dict[str, Any]] = {}
    for group in fits(view):
        found = group.fit
        row: dict[str, Any] = dict.fromkeys(COLUMNS)
        row.update(usl_status=found.status, usl_reason=found.reason, usl_rate=group.rate)
        for name, column in _INTERVALS if found.ok else ():
            if (value := getattr(found, name)) is not None:
                row.update(
                    {f"usl_{column}": value.value, f"usl_{column}_low": value.low, f"usl_{column}_high": value.high}
                )
        band = found.predict([count for count, _ in group.members]) if found.ok else None
        for i, (_, cell) in enumerate(group.members):
            out[cell.id] = dict(row)
            if band is not None:
                out[cell.id]["usl_fitted_rate"] = float(band.rate[i])
                if band.low is not None and band.high is not None:
                    out[cell.id]["usl_fitted_rate_low"] = float(band.low[i])
                    out[cell.id]["usl_fitted_rate_high"] = float(band.high[i])
    return out
