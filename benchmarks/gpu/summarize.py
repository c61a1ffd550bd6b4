"""The GPU check's summary: OUTDIR/summary.md from what benchmarks/gpu/run.sh left in OUTDIR.

Reads the steps' log (steps.tsv), the machine facts (env.txt), the forward-pass curve of
`harness limits` and the self-play sweep's summary.csv and findings, and holds the sweep
against the goals of shared/GPU.md: at 32+ workers the server keeps its mean batch >= 0.8 x
max_batch, the GPU >= 70 % busy, nn_evals/s >= 70 % of the bare forward pass at that batch,
and >= 10x the games/min of `processes` (a net per worker) at the same worker count. A goal
is "met", "missed" or "not measured"; nothing here is assumed.

    python benchmarks/gpu/summarize.py OUTDIR
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd

GOAL_MIN_WORKERS = 32


def read_steps(out: Path) -> list[str]:
    path = out / "steps.tsv"
    if not path.exists():
        return ["(no steps.tsv)"]
    lines = ["| step | exit | seconds |", "| --- | --- | --- |"]
    for row in path.read_text().splitlines():
        name, rc, seconds = (row.split("\t") + ["", "", ""])[:3]
        lines.append(f"| {name} | {rc} | {seconds} |")
    return lines


def run_dirs(runs: Path, label: str) -> list[Path]:
    return sorted(p for p in runs.glob(f"*-{label}*") if p.is_dir()) if runs.exists() else []


def limits_curve(runs: Path) -> dict[int, float]:
    """The newest limits run's forward curve on cuda: batch -> evals/s."""
    for run in reversed(run_dirs(runs, "limits")):
        for line in (run / "cells.jsonl").read_text().splitlines():
            record = json.loads(line)
            for key, curve in record.get("metrics", {}).items():
                if key.endswith("_per_s_curve"):
                    return {int(k): float(v) for k, v in curve.items()}
    return {}


def rate_at(curve: dict[int, float], size: float) -> float | None:
    """Linear in log2(size) between measured sizes (as harness.roofline.efficiency reads it)."""
    from harness.roofline.efficiency import rate_at as harness_rate_at

    return harness_rate_at({str(k): v for k, v in curve.items()}, size)


def fmt(value: object, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def sweep_tables(run: Path, curve: dict[int, float]) -> list[str]:
    table = pd.read_csv(run / "summary.csv")

    def col(row: pd.Series, name: str) -> float | None:
        value = row.get(f"{name}_median", row.get(name))
        return None if value is None or pd.isna(value) else float(value)

    lines = [
        f"Run directory: `{run.name}`",
        "",
        "| backend | workers | status | games/min | moves/s | nn_evals/s | batch mean | GPU util % | GPU mem peak MB "
        "| GPU procs | evals/s of bare forward at that batch |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for _, row in table.sort_values(["backend", "workers"]).iterrows():
        evals, batch = col(row, "nn_evals_per_s"), col(row, "batch_mean")
        bare = rate_at(curve, batch) if curve and batch else None
        share = f"{100 * evals / bare:.0f} % of {bare:,.0f}" if evals and bare else "-"
        lines.append(
            f"| {row['backend']} | {row['workers']} | {row.get('status', '-')} | {fmt(col(row, 'games_per_min'))} "
            f"| {fmt(col(row, 'moves_per_s'))} | {fmt(evals, 0)} | {fmt(batch)} | {fmt(col(row, 'gpu_util_mean'))} "
            f"| {fmt(col(row, 'gpu_mem_peak_mb'), 0)} | {fmt(col(row, 'gpu_procs_peak'), 0)} | {share} |"
        )
    lines += ["", "Goals (shared/GPU.md), server cells at 32+ workers:", ""]
    lines += ["| workers | goal | measured | verdict |", "| --- | --- | --- | --- |"]
    server = table[(table["backend"] == "server") & (table["workers"] >= GOAL_MIN_WORKERS)]
    for _, row in server.sort_values("workers").iterrows():
        workers = row["workers"]
        peer = table[(table["backend"] == "processes") & (table["workers"] == workers)]
        max_batch = float(row["max_batch"])
        batch, util = col(row, "batch_mean"), col(row, "gpu_util_mean")
        evals = col(row, "nn_evals_per_s")
        bare = rate_at(curve, batch) if curve and batch else None
        games = col(row, "games_per_min")
        peer_games = col(peer.iloc[0], "games_per_min") if len(peer) else None
        checks = [
            (
                "batch mean >= 0.8 x max_batch",
                batch,
                None if batch is None else batch >= 0.8 * max_batch,
                f"of {max_batch:.0f}",
            ),
            ("GPU util >= 70 %", util, None if util is None else util >= 70, "%"),
            (
                "evals/s >= 70 % of bare forward",
                evals,
                None if not (evals and bare) else evals >= 0.7 * bare,
                f"bare {fmt(bare, 0)}",
            ),
            (
                "games/min >= 10x processes",
                games,
                None if not (games and peer_games) else games >= 10 * peer_games,
                f"processes {fmt(peer_games)}",
            ),
        ]
        for goal, value, ok, note in checks:
            verdict = "not measured" if ok is None else ("met" if ok else "missed")
            lines.append(f"| {workers} | {goal} | {fmt(value)} ({note}) | {verdict} |")
    return lines


def findings(run: Path) -> list[str]:
    done = subprocess.run(["harness", "diagnose", str(run), "--json"], capture_output=True, text=True, timeout=120)
    try:
        found = json.loads(done.stdout)
    except json.JSONDecodeError:
        return [f"(harness diagnose failed: {done.stderr.strip()[-300:]})"]
    return [f"- {f['severity']} {f['rule']}: {f['hint']}" for f in found] or ["- none"]


def main(out: Path) -> None:
    runs = out / "runs"
    lines = ["# GPU check", ""]
    env = out / "env.txt"
    lines += ["## Machine", "", "```", env.read_text().strip() if env.exists() else "(no env.txt)", "```", ""]
    lines += ["## Steps", "", *read_steps(out), ""]
    curve = limits_curve(runs)
    lines += ["## Forward pass per batch (harness limits)", ""]
    lines += [f"- batch {b}: {v:,.0f} evals/s" for b, v in sorted(curve.items())] or ["- not measured"]
    lines.append("")
    watches = sorted(p for p in runs.glob("watch-*/*") if p.is_dir()) if runs.exists() else []
    sweeps = [p for p in run_dirs(runs, "gpu-") if (p / "cells.jsonl").exists()]
    for label, found in (("sweep", sweeps), ("watch", watches)):
        for run in found:
            lines += [f"## {label}: {run.parent.name}/{run.name}", ""]
            if (run / "summary.csv").exists() and label != "watch":
                lines += sweep_tables(run, curve)
            lines += ["", "Findings:", "", *findings(run), ""]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
