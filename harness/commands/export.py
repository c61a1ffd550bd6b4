"""`harness export RUN_DIR --FORMAT OUT`: a run for other tools (harness.report.exports)."""

from __future__ import annotations

from pathlib import Path

from harness.errors import UserError
from harness.report.exports import EXPORTS, exporter


def flag(name: str) -> str:
    """An export's command-line flag: github_action -> github-action."""
    return name.replace("_", "-")


def main(run_dir: Path, outputs: dict[str, Path | None], metrics: list[str] | None) -> int:
    wanted = {name: out for name, out in outputs.items() if out is not None}
    if not wanted:
        raise UserError("say what to export: " + " or ".join(f"--{flag(name)} OUT.json" for name in EXPORTS))
    for name, out in wanted.items():
        count, skipped = exporter(name)(run_dir, out, metrics)
        for item in skipped:
            print(f"{name}: skipped {item}")
        print(f"{name}: {count} entries written: {out}")
    return 0
