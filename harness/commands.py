"""What each CLI command does. cli.py only parses arguments and calls these."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rich.table import Table

from harness.errors import UserError
from harness.executors import get_executor
from harness.matrix import Overrides, Spec, apply_overrides, expand, load_spec, single_cell
from harness.params import describe_params, parse_assignments, parse_list
from harness.progress import Progress
from harness.registry import discover
from harness.report.csv import write_csv
from harness.report.terminal import console_for_stdout, render
from harness.store import RunStore
from harness.sweep import execute, new_run, stored_cells

DEFAULT_RESULTS = Path("results")


def exit_code(records: list[dict[str, Any]]) -> int:
    return 0 if records and all(r["status"] == "ok" for r in records) else 1


def cmd_suites() -> None:
    suites, broken = discover()
    console = console_for_stdout()
    for name, suite in sorted(suites.items()):
        table = Table(title=f"{name}: {suite.description}", title_justify="left")
        for col in ("param", "allowed", "default", "unit", "description"):
            table.add_column(col)
        for row in describe_params(suite.params):
            table.add_row(
                row["name"],
                row["allowed"],
                row["default"],
                row["unit"],
                row["description"],
            )
        console.print(table)
    for name, why in sorted(broken.items()):
        console.print(f"[red]{name}[/red]: could not be loaded: {why}", markup=True)


def build_overrides(
    suite: str | None,
    workers: str | None,
    backend: str | None,
    sets: list[str] | None,
    duration: float | None,
    warmup: float | None,
    work: int | None,
    repeats: int | None,
    timeout: float | None,
    label: str | None,
    memory_limit_mb: float | None = None,
) -> Overrides:
    axes: dict[str, list[Any]] = dict(parse_assignments(sets))
    for flag, key, text in (("--workers", "workers", workers), ("--backend", "backend", backend)):
        values = parse_list(flag, text)
        if values is not None:
            axes[key] = values
    return Overrides(
        suite=suite,
        axes=axes,
        duration=duration,
        warmup=warmup,
        work=work,
        repeats=repeats,
        timeout=timeout,
        label=label,
        memory_limit_mb=memory_limit_mb,
    )


def cmd_sweep(
    spec_path: Path | None,
    overrides: Overrides,
    out: Path,
    resume: Path | None,
    quiet: bool,
    executor: str = "local",
    address: str | None = None,
) -> int:
    if resume is not None:
        store = RunStore.open(resume)
        cells = stored_cells(store)
        if not cells:
            raise UserError(f"{resume}/run.json lists no cells to resume")
    else:
        spec = load_spec(spec_path) if spec_path is not None else Spec()
        spec = apply_overrides(spec, overrides)
        cells = expand(spec)
        store = new_run(out, spec, cells, sys.argv)
    runner = get_executor(executor, address)
    records = execute(store, cells, runner, Progress(quiet=quiet))
    finish_report(store, records, quiet)
    return exit_code(records)


def findings_for(store: RunStore, records: list[dict[str, Any]]) -> list[Any]:
    """The run's diagnoses (harness.diagnose.Finding), computed once for every output."""
    from harness.diagnose import diagnose

    return diagnose(records, store.meta())


def write_reports(
    store: RunStore,
    records: list[dict[str, Any]],
    html: bool = True,
    markdown: bool = False,
    findings: list[Any] | None = None,
) -> list[Path]:
    """summary.csv and cells.csv, then report.html and summary.md when asked. Self-play
    cells get `efficiency_pct` when a `harness limits` run sits beside this one."""
    from harness.limits import latest_limits, with_efficiency

    records = with_efficiency(records, latest_limits(store.root.parent))
    paths = write_csv(store.root, records)
    if html or markdown:
        if findings is None:
            findings = findings_for(store, records)
        as_dicts = [f.to_json() for f in findings]
        meta = store.meta()
    if html:
        from harness.report.html import write_html

        paths.append(write_html(store.root, meta, records, as_dicts))
    if markdown:
        from harness.report.markdown import write_markdown

        paths.append(write_markdown(store.root, meta, records, as_dicts))
    return paths


def finish_report(store: RunStore, records: list[dict[str, Any]], quiet: bool) -> None:
    findings = findings_for(store, records)
    try:
        paths = write_reports(store, records, html=True, findings=findings)
    except Exception as exc:  # a report bug must not cost the sweep's exit code or its CSVs
        print(
            f"warning: reports not written ({type(exc).__name__}: {exc}); retry: harness report {store.root} --html",
            file=sys.stderr,
        )
        paths = []
    if not quiet:
        render(records)
    print_findings(findings, quiet)
    failed = sum(r["status"] != "ok" for r in records)
    print(f"{len(records)} cell-repeats, {failed} failed; run directory: {store.root}")
    print("reports: " + ", ".join(str(p) for p in paths))


def print_findings(findings: list[Any], quiet: bool) -> None:
    """The diagnoses at the end of a sweep: a table, or plain lines with --quiet."""
    from harness.report.terminal import render_findings

    if not quiet:
        render_findings(findings)
    for f in findings if quiet else []:
        print(f"{f.severity} {f.rule} [{', '.join(f.cells)}]: {f.hint}")


def cmd_run(
    suite_name: str,
    sets: list[str] | None,
    duration: float | None,
    warmup: float | None,
    work: int | None,
    timeout: float | None,
    as_json: bool,
    out: Path,
    memory_limit_mb: float | None = None,
) -> int:
    spec, cell = single_cell(
        "run", suite_name, sets, duration=duration, warmup=warmup, work=work, timeout=timeout,
        memory_limit_mb=memory_limit_mb,
    )  # fmt: skip
    cells = [cell]
    store = new_run(out, spec, cells, sys.argv)
    records = execute(store, cells, get_executor("local"), Progress(quiet=True))
    record = records[0]
    if as_json:
        print(json.dumps(record, default=str))
    else:
        render(records)
        console = console_for_stdout()
        for key, value in sorted(record["metrics"].items()):
            if not isinstance(value, dict):
                console.print(f"  {key}: {value}", markup=False, highlight=False)
        print(f"run directory: {store.root}")
    if record["status"] == "ok":
        return 0
    print(f"{record['status']}: {record['reason']}", file=sys.stderr)
    return 2 if record.get("user_error") else 1


def cmd_report(run_dir: Path, csv: bool, html: bool = False, markdown: bool = False) -> int:
    store = RunStore.open(run_dir)
    records = store.records()
    render(records)
    if csv or html or markdown:
        paths = write_reports(store, records, html=html, markdown=markdown)
        for path in paths if csv else paths[2:]:
            print(path)
    return 0
