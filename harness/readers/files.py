"""Finding the files a program writes: a path or glob, relative to the program's working
directory, looked up again on every poll (a trainer creates its log directory after it
starts, and a new run writes a new event file)."""

from __future__ import annotations

import glob
from pathlib import Path


def matching(pattern: str, cwd: Path) -> list[Path]:
    full = pattern if Path(pattern).is_absolute() else str(cwd / pattern)
    return sorted(Path(p) for p in glob.glob(full, recursive=True) if Path(p).is_file())
