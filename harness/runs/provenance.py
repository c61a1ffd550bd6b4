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
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from harness.runs.record import Record

FAILED = "failed"
FEW = "few reports"
NOTES = {FAILED: "check failed", FEW: "few reports"}  # what a cell's rate carries beside it
_SOURCE = re.compile(r"from (`[^`]*` \([^)]*\)), (a level|increments per report|ambiguous)")
_ORDER = ("passed", "warned", "unchecked", FEW, FAILED)


def cell_note(records: Iterable[Record]) -> str | None:
    """`check failed` when an ok repeat's headline failed its checks (every counter was set
    aside), `few reports` when its counter changed under twice in the window, `one rank of N`
    for a torch.distributed job's; else None."""
    ok = [r for r in records if r.ok]
    verdicts = {r.metrics.get("headline_check") for r in ok}
    notes = [NOTES[v] for v in (FAILED, FEW) if v in verdicts]
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
