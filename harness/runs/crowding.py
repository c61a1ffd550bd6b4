"""Whether a cell measured the program, or the program on a machine others were using.

Two facts about a cell's records that decide whether a finding may rest on them, judged
here once for the diagnosis gate (harness.diagnosis.needs):

- `unmeasured`: the cells that ended before their measured window opened (`measure_s` 0,
  `warmup_reason` "the run ended during warm-up"). Everything such a cell holds, its rates,
  the shares and signals harness watch read, is the program's start-up: DEAP's GA ends in
  2.7 s and its sweep cell, all warm-up, still fed PIPELINE_BOUND.
- `crowding`: the cells in which the rest of the machine (`cpu_others_mean`, harness.monitors.
  others: every CPU's busy time less the program's tree and the harness) took at least
  CROWDED_SHARE of the cores. A comparison across worker counts then measures the
  contention for the cores that were left, as much as the program: gensim's word2vec fell
  0.83x from 1 to 2 threads while the rest of the machine used 154 % and 156 % of 200 %,
  the program got 0.38 and 0.36 of a core, and its threads never waited on the GIL.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.runs.record import CellGroup

# the share of the machine's cores the rest of it may take before a comparison across worker
# counts stops being the program's: with half the cores taken, the added workers of a sweep
# that reaches the core count have no core of their own (on this project's 2-core VM, one)
CROWDED_SHARE = 0.5
WARMUP_ENDED = "the run ended during warm-up"


def unmeasured(cells: Sequence[CellGroup]) -> list[str]:
    """The cells with an ok repeat that had no measured window (`measure_s` 0)."""
    out = []
    for cell in cells:
        if any(_no_window(rec.metrics) for rec in cell.ok):
            out.append(cell.id)
    return out


def _no_window(metrics: dict) -> bool:
    window = metrics.get("measure_s")
    if isinstance(window, int | float) and not isinstance(window, bool):
        return window <= 0
    return metrics.get("warmup_reason") == WARMUP_ENDED


def crowding(cells: Sequence[CellGroup], cores: int) -> str | None:
    """Why a comparison of these cells may measure the machine's crowding (None: the cores
    were the program's, or nothing was recorded): the cells in which the rest of the machine
    took at least CROWDED_SHARE of the `cores`, with its use and the program's."""
    taken = [(cell, others) for cell in cells if (others := cell.median("cpu_others_mean")) is not None]
    crowded = [(cell, others) for cell, others in taken if others >= 100.0 * CROWDED_SHARE * cores]
    if not crowded:
        return None
    used = ", ".join(f"{others:.0f} %" for _, others in crowded)
    ids = ", ".join(cell.id for cell, _ in crowded)
    own = [cell.median("cpu_util_mean") for cell, _ in crowded]
    program = (
        f"; the program used {', '.join(f'{v:.0f} %' for v in own if v is not None)}"
        if all(v is not None for v in own)
        else ""
    )
    return (
        f"the rest of the machine used {used} of its {100 * cores} % during cell{'s' if len(crowded) > 1 else ''} "
        f"{ids}{program}: more workers had no free core to run on, so the comparison measures that crowding as "
        "much as the program (run it again on a quieter machine)"
    )
