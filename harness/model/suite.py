"""What a suite package exposes (`Suite`), what a cell occupies (`Resources`), the error a
suite can explain in one line (`SuiteError`), and the memory limit a cell runs under.

Suites import these through harness.probe, the one module of the harness they see.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import BaseModel

from harness.model.vocabulary import EMPTY, Vocabulary
from harness.model.workshare import resolve_workers

# The runner puts the cell's --memory-limit here (MB) for memory_limit_mb() to read.
MEMORY_LIMIT_ENV = "HARNESS_MEMORY_LIMIT_MB"


def memory_limit_mb() -> float | None:
    """The memory limit the harness enforces on this cell's process tree (MB of PSS summed
    over its processes), or None without one. A watchdog in the harness ends the tree when
    it is passed; a suite may read it to size its buffers, or to refuse a workload that
    needs a limit to be safe."""
    import os

    value = os.environ.get(MEMORY_LIMIT_ENV)
    try:
        return float(value) if value else None
    except ValueError:
        return None


class SuiteError(Exception):
    """A failure the suite can explain in one line (bad device, unsupported combination).

    The cell is recorded as `error` with this message as its reason and no traceback; the
    CLI's `harness run` exits 2 for it, because it is the user's input that was wrong.
    """


@dataclass(frozen=True)
class Resources:
    """What one cell occupies while it runs: used to flag oversubscription and by Ray."""

    cpus: int
    gpus: int = 0


@dataclass(frozen=True)
class Suite:
    """What a suite package exposes as `SUITE` through the `harness.suites` entry points.

    `run` should import its heavy modules (torch) lazily, so that listing suites and
    starting worker processes that need no network stays cheap. `vocabulary` says what
    its numbers mean (harness.model.vocabulary); `words` is it with conventions filled in.

    `requires` names the modules `run` imports that a base install may lack (import names,
    e.g. "torch"), and `extra` the pip extra of the suite's distribution that installs them:
    the harness checks them before a cell runs (without importing them), so a missing one is
    a clear "install the [extra]" at once rather than an ImportError inside a cell.
    `watch=True` asks the runner to put the outside-in instruments of `harness watch`
    (sampled stacks, pipe traffic, the torch hook, rates in the log) over every cell: for a
    suite that launches a program it does not control and so cannot report from inside.
    """

    name: str
    description: str
    params: type[BaseModel]
    run: Callable[[Any, Any], None]  # run(params, probe: harness.probe.Probe)
    resources: Callable[[Any], Resources] | None = None
    vocabulary: Vocabulary = EMPTY
    requires: tuple[str, ...] = ()
    extra: str | None = None
    watch: bool = False

    def missing(self) -> list[str]:
        """The required modules not installed here. find_spec locates a module without
        importing it, so asking costs microseconds even for torch."""
        from importlib.util import find_spec

        out = []
        for name in self.requires:
            try:
                found = find_spec(name) is not None
            except (ImportError, ValueError):  # a parent package missing, or a broken one
                found = False
            if not found:
                out.append(name)
        return out

    @cached_property
    def words(self) -> Vocabulary:
        return self.vocabulary.resolve(self.params)

    def resources_for(self, params: BaseModel) -> Resources:
        """CPUs a cell occupies: declared, else its workers plus its extra processes."""
        if self.resources is not None:
            return self.resources(params)
        key = self.words.workers
        workers = getattr(params, key, 1) if key else 1
        cpus = resolve_workers(int(workers)) if isinstance(workers, int) else 1
        if self.words.extra_processes is not None:
            cpus += self.words.extra_processes(params)
        return Resources(cpus=cpus)
