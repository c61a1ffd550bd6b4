"""Whether the user's program runs as a torch.distributed job, read from its processes'
environments, because a job of N ranks usually prints the progress of one of them.

torchrun, accelerate and Lightning start each rank with its place in the job in its
environment: `WORLD_SIZE` and `RANK` or `LOCAL_RANK` (Lightning sets them for the ranks it
starts; the first rank sets its own after it has started, so /proc shows them only for the
others). All ranks write into the same pipe, and the programs print their bars and tables
from rank 0 alone: a counter read there is one rank's, while the job does about WORLD_SIZE
times that work (samples, environment steps; its optimizer steps stay one rank's). Which is
"the" rate is the user's call, so the harness does not convert it: it says that the job has
N ranks wherever the rate is shown (harness.runs.provenance, NEGATIVE_SCALING).
"""

from __future__ import annotations

from collections.abc import Iterable

import psutil

WORLD_KEY = "WORLD_SIZE"
RANK_KEYS = ("RANK", "LOCAL_RANK")


def rank_of(environ: dict[str, str]) -> tuple[int, int] | None:
    """(WORLD_SIZE, rank) from one process's environment; None if it is not a rank of a job
    of more than one process."""
    try:
        size = int(environ.get(WORLD_KEY, ""))
        rank = next(int(environ[key]) for key in RANK_KEYS if key in environ)
    except (ValueError, StopIteration):
        return None
    return (size, rank) if size > 1 and 0 <= rank < size else None


def world_size(processes: Iterable[psutil.Process]) -> int | None:
    """The size of the job the processes belong to (the largest WORLD_SIZE a rank of them
    carries), or None: not a job of several ranks."""
    sizes = []
    for proc in processes:
        try:
            seen = rank_of(proc.environ())
        except (psutil.Error, OSError):
            continue  # ended, or not ours to read
        if seen is not None:
            sizes.append(seen[0])
    return max(sizes, default=None)


def doubt(size: int) -> str:
    """What a rate read from the output of a job of `size` ranks may be."""
    return (
        f"the program runs as a torch.distributed job of {size} processes (WORLD_SIZE={size}); such jobs print "
        f"one rank's progress, so this rate is likely one rank's and the job's total about {size}x it "
        "(samples and steps of the environment; optimizer steps stay one rank's)"
    )
