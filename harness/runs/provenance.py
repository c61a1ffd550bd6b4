"""Where a run's headline came from, in one line, and which cells' headlines failed a check.

A program's headline is a counter the harness found in its output (harness.readers). Each
cell's record carries that counter's provenance (`headline_provenance`: the key, the reader,
what kind of number it is, how it was checked) and the verdict of its checks
(`headline_check`: passed, warned, unchecked, or failed when no counter passed and the
headline is the finest one left). The terminal and the HTML report print `line()` under a
suite's table and `cell_note()` beside a failed cell's rate, so a number the harness is not
sure of never stands alone. A program that runs as a torch.distributed job
(`program_world_size`, harness.program.distributed) prints one rank's progress: its cells'
rates carry `one rank of N`.

`doubt(rate, records)` is the one judgement of whether a rate may carry a verdict, which every
diagnosis rule's findings pass through (harness.diagnosis.needs): a rate whose window held
too few units (`<rate>_valid` = 0), whose check failed, or that the checks set aside is
refused; one read from few reports, or left unchecked where a check was possible (the program
printed a rate nothing paired with it: a `step=` counter 3x the `it/s` beside it) or where its
reading is a guess a second source would have caught (per-report increments summed, an
ambiguous series, a running total that "restarted": a program's step counter printed in
bursts was summed to 77x the truth, an evaluation's `episode 0..9` index was read as
episodes), is doubted. A suite's own counts are exact and never doubted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from harness.model.vocabulary import HEADLINE_METRIC
from harness.runs.record import Record

FAILED = "failed"
FEW = "few reports"
NOTES = {FAILED: "check failed", FEW: "few reports"}  # what a cell's rate carries beside it
_SOURCE = re.compile(r"from (`[^`]*` \([^)]*\)), (a level|increments per report|ambiguous)")
UNCHECKED = "unchecked"
_ORDER = ("passed", "warned", UNCHECKED, FEW, FAILED)
_RESTARTS = re.compile(r"(\d+) restarts?\b")
_ASIDE = re.compile(r"(?:^|; )(\w+): ")  # `name: why; name: why` (progress_set_aside)


@dataclass(frozen=True)
class Doubt:
    """Why a rate may not be what it reads. `refuse`: it is known wrong or meaningless (no
    finding may rest on it); else a finding may, with `why` in its first line."""

    refuse: bool
    why: str


def doubt(rate: str | None, records: Iterable[Record]) -> Doubt | None:
    """Whether the ok records' `rate` (`x_per_s` or `x_per_min`) may carry a verdict: None when
    nothing stands against it, else the doubt, refused when any record refuses it, with the
    reasons and the cells they stand in: `its check failed (cells w2, w4)`."""
    if rate is None:
        return None
    per_s = rate.removesuffix("_per_min") + "_per_s" if rate.endswith("_per_min") else rate
    found: dict[str, list[str]] = {}
    refused = False
    for rec in records:
        if not rec.ok:
            continue
        one = _record_doubt(rec, per_s)
        if one is not None:
            refused |= one.refuse
            found.setdefault(one.why, [])
            if rec.id not in found[one.why]:
                found[one.why].append(rec.id)
    if not found:
        return None
    said = "; ".join(f"{why} (cell{'s' if len(ids) > 1 else ''} {', '.join(ids)})" for why, ids in found.items())
    return Doubt(refused, f"{rate}: {said}")


def _record_doubt(rec: Record, per_s: str) -> Doubt | None:
    m = rec.metrics
    if m.get(f"{per_s}_valid") == 0:
        return Doubt(True, "too few units completed in its window to mean anything")
    if not m.get("headline_provenance"):
        return None  # a suite's own count
    if m.get(HEADLINE_METRIC) != per_s:
        # another counter of the program: only whether its checks set it aside is recorded
        aside = _ASIDE.findall(str(m.get("progress_set_aside") or ""))
        return Doubt(True, "its checks set it aside") if per_s.removesuffix("_per_s") in aside else None
    check = str(m.get("headline_check", UNCHECKED))
    if check == FAILED:
        return Doubt(True, "its check failed: no counter passed")
    if check == FEW:
        return Doubt(False, "it rests on few reports in its window")
    unconfirmed = _unconfirmed(rec, per_s)
    if check == UNCHECKED and unconfirmed:
        return Doubt(False, f"unchecked, {unconfirmed}")
    return None


def _unconfirmed(rec: Record, per_s: str) -> str | None:
    """Why an unchecked headline could have been checked, or is a guess a check would have
    caught: a rate the program printed that nothing paired with it, per-report increments
    summed, an ambiguous series, a running total read through restarts (None: a plain running
    total, and nothing else printed to hold it against)."""
    m = rec.metrics
    counted = rec.number(per_s)
    printed = sorted(n for n in m if n.startswith("printed_") and n.endswith("_per_s") and rec.number(n))
    if printed:
        value = rec.number(printed[0]) or 0.0
        ratio = f" (it reads {counted / value:.2g}x that)" if counted else ""
        return f"though the program printed {printed[0].removeprefix('printed_')}, which nothing paired with it{ratio}"
    text = str(m.get("headline_provenance") or "")
    found = _SOURCE.search(text)
    if found and found[2] == "increments per report":
        return "and read as per-report increments summed, which nothing else the program printed confirmed"
    if found and found[2] == "ambiguous":
        return "and read from a series that drops as often as it grows"
    restarts = _RESTARTS.search(text)
    if restarts:
        return f"and read as a running total that restarted {restarts[1]}x, which nothing else confirmed"
    return None


def cell_note(records: Iterable[Record]) -> str | None:
    """`check failed` when an ok repeat's headline failed its checks (every counter was set
    aside), `few reports` when its counter changed under twice in the window, `unchecked
    guess` when nothing checked a reading a check could have caught (doubt()), `one rank of N` for a
    torch.distributed job's; else None."""
    ok = [r for r in records if r.ok]
    verdicts = {r.metrics.get("headline_check") for r in ok}
    notes = [NOTES[v] for v in (FAILED, FEW) if v in verdicts]
    unconfirmed = [
        r for r in ok
        if r.metrics.get("headline_provenance") and r.metrics.get("headline_check", UNCHECKED) == UNCHECKED
        and _unconfirmed(r, str(r.metrics.get(HEADLINE_METRIC)))
    ]  # fmt: skip
    if unconfirmed:
        notes.append("unchecked guess")
    size = world_size(ok)
    if size:
        notes.append(f"one rank of {size}")
    return "; ".join(notes) or None


def world_size(records: Iterable[Record]) -> int | None:
    """The largest torch.distributed job the records' program ran as (None: not one)."""
    sizes = [int(r.metrics["program_world_size"]) for r in records if r.metrics.get("program_world_size")]
    return max(sizes) if sizes else None


def line(rate: str | None, records: Iterable[Record]) -> str | None:
    """`env_step_per_s: the program's `env_step` (sentences), a level; checks passed in 2
    cells, warned in 1` (None when the headline was not read from a program's output). A
    program whose output gave no rate (no counter, or only indices: harness.readers) gets
    `none: ...` and the readers' advice (`progress_advice`: the --progress to paste)."""
    records = list(records)
    ok = [r for r in records if r.ok and r.metrics.get("headline_provenance")]
    advice = next(
        (str(r.metrics["progress_advice"]) for r in records if r.ok and r.metrics.get("progress_advice")), None
    )
    if advice is not None and (rate is None or not ok):
        return f"none: no throughput could be read from the program's output. {advice}"
    if rate is None or not ok:
        return None
    sources = Counter()
    for rec in ok:
        found = _SOURCE.search(str(rec.metrics["headline_provenance"]))
        sources[f"{found[1]}, {found[2]}" if found else "the program's output"] += 1
    verdicts = Counter(str(r.metrics.get("headline_check", "unchecked")) for r in ok)
    said = ", ".join(f"{v} in {verdicts[v]} cell{'s' if verdicts[v] > 1 else ''}" for v in _ORDER if verdicts[v])
    text = f"{rate}: from {'; '.join(sources)}; its checks {said}"
    failed = [r for r in ok if r.metrics.get("headline_check") == FAILED]
    if failed:
        why = str(failed[0].metrics.get("progress_set_aside") or failed[0].metrics["headline_provenance"])
        text += f" (no counter passed in {failed[0].label}: {why})"
    ranked = [size for r in ok if (size := world_size([r]))]  # one per record of a job
    if ranked:
        sizes = sorted(set(ranked))
        text += (
            f"; in {len(ranked)} cell{'s' if len(ranked) > 1 else ''} the program ran as a torch.distributed job "
            f"({', '.join(map(str, sizes))} ranks), whose output is usually one rank's progress: the job does "
            "about that many times the work"
        )
    return text
