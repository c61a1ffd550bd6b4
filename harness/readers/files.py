"""Finding the files a program writes: a path or glob, relative to the program's working
directory, looked up again on every poll (a trainer creates its log directory after it
starts, and a new run writes a new event file). Only files written since the reader was
made count: `runs/**` also holds every earlier run's event files, and their steps are not
this run's progress."""

from __future__ import annotations

import glob
from pathlib import Path

MTIME_SLACK_S = 2.0  # file systems stamp mtimes coarsely


def expand(pattern: str, cwd: Path) -> list[Path]:
    full = pattern if Path(pattern).is_absolute() else str(cwd / pattern)
    return sorted(Path(p) for p in glob.glob(full, recursive=True))


def written_since(path: Path, since: float) -> bool:
    try:
        return path.stat().st_mtime >= since - MTIME_SLACK_S
    except OSError:
        return False


def matching(pattern: str, cwd: Path, since: float = 0.0) -> list[Path]:
    """Files the pattern names, written since `since` (a time.time())."""
    return [p for p in expand(pattern, cwd) if p.is_file() and written_since(p, since)]
