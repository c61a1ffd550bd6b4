"""`harness baseline save RUN_DIR --name NAME`: freeze a run for `harness gate`."""

from __future__ import annotations

import json
from pathlib import Path

from harness.analysis.baselines import save


def save_main(run_dir: Path, name: str, directory: Path, bound_slack: float) -> int:
    path = save(run_dir, name, directory, bound_slack)
    data = json.loads(path.read_text())
    repeats = sum(len(c["repeats"]) for c in data["cells"])
    print(
        f"baseline {data['name']}: {len(data['cells'])} cells, {repeats} repeats, commit {data['run'].get('git_commit')}"
    )
    print(f"written: {path}")
    return 0
