"""Do two revisions of the harness write the same reports of the same stored runs?

A refactor of the report path (one view of a run handed to every writer) must not
change what a user reads. This runs `harness report RUN --csv --markdown` and
`harness diagnose RUN --json` with a base revision (a temporary git worktree) and with the
working tree, each over its own copy of every run directory given, and compares what they
wrote: summary.csv, cells.csv, summary.md and the findings. Exit 0 when all are the same,
1 with a unified diff of each difference.

    python benchmarks/same_reports.py --base f22ae57 RUN_DIR [RUN_DIR ...]

Run directories of any kind work: a sweep, a `harness watch`, an A/B (no cells: both sides
must write the same empty tables).
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMPARED = ("summary.csv", "cells.csv", "summary.md", "findings.json")


def outputs(tree: Path, run_dir: Path, scratch: Path) -> dict[str, str]:
    """What `tree`'s harness writes for a copy of `run_dir`: file name -> text."""
    copy = scratch / run_dir.name
    shutil.copytree(run_dir, copy)
    for name in COMPARED:
        (copy / name).unlink(missing_ok=True)  # only what this revision writes is compared
    env = {**os.environ, "PYTHONPATH": str(tree)}
    harness = [sys.executable, "-m", "harness.cli"]
    subprocess.run([*harness, "report", str(copy), "--csv", "--markdown"], cwd=tree, env=env, check=True,
                   capture_output=True, text=True)  # fmt: skip
    found = subprocess.run([*harness, "diagnose", str(copy), "--json"], cwd=tree, env=env, check=True,
                           capture_output=True, text=True)  # fmt: skip
    (copy / "findings.json").write_text(found.stdout)
    return {name: (copy / name).read_text() if (copy / name).exists() else "(not written)\n" for name in COMPARED}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the revision to compare the working tree with")
    parser.add_argument("runs", nargs="+", type=Path, help="stored run directories")
    args = parser.parse_args()
    differences = 0
    with tempfile.TemporaryDirectory(prefix="same-reports-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base), args.base], cwd=ROOT, check=True)
        try:
            for run_dir in args.runs:
                before = outputs(base, run_dir.resolve(), Path(tmp) / "before")
                after = outputs(ROOT, run_dir.resolve(), Path(tmp) / "after")
                for name in COMPARED:
                    same = before[name] == after[name]
                    print(f"{'same' if same else 'DIFFERENT'}  {run_dir.name}/{name}")
                    if not same:
                        differences += 1
                        sys.stdout.writelines(
                            difflib.unified_diff(
                                before[name].splitlines(True), after[name].splitlines(True), f"{args.base}", "working tree"
                            )
                        )
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
    print(f"{differences} difference(s) over {len(args.runs)} run directories")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
