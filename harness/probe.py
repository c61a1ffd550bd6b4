"""The only API a suite sees.

A suite imports everything it needs from here: the Probe it reports through
(harness.cell.probe: counters, observations, values, work, phases, quality, the stop
signal) and the rest of its contract (Suite, SuiteError, Resources and the memory limit
from harness.model.suite, the vocabulary types, the Choices registry of its backends, the
work-sharing helpers). It is a facade one floor above cell/ and model/, whose modules it
names: the child's entry point (cell/main.py) takes the Probe from cell/ directly, so
nothing below imports this module and a suite never depends on the harness's layout.
"""

from __future__ import annotations

from harness.cell.probe import Probe
from harness.model.choices import Choices
from harness.model.suite import MEMORY_LIMIT_ENV, Resources, Suite, SuiteError, memory_limit_mb
from harness.model.vocabulary import Advice, LimitBenchmark, Move, Quality, Rate, Reference, Vocabulary
from harness.model.workshare import resolve_workers, split_work, usable_cores

__all__ = [
    "MEMORY_LIMIT_ENV",
    "Advice",
    "Choices",
    "LimitBenchmark",
    "Move",
    "Probe",
    "Quality",
    "Rate",
    "Reference",
    "Resources",
    "Suite",
    "SuiteError",
    "Vocabulary",
    "memory_limit_mb",
    "resolve_workers",
    "split_work",
    "usable_cores",
]
