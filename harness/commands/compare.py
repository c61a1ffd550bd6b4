"""`harness compare RUN_A RUN_B [--fail-on regression]`: ratios B/A per matched cell and
metric; with --fail-on regression, exit 1 when a throughput of B is slower than A's beyond
the tolerance, 3 when one cannot be told apart from the tolerance, 0 otherwise."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.commands import options
from harness.errors import UserError

FAIL_ON = ("regression",)


EXITS = options.exit_codes(
    """
    0 the ratios printed; with --fail-on regression, no throughput slower beyond --tolerance
    1 with --fail-on regression: a throughput slower beyond --tolerance
    3 with --fail-on regression: none slower, but one undecided (e.g. one repeat a side)
    """
)


@options.command(epilog=EXITS)
def compare(
    run_a: Path = typer.Argument(..., help="baseline run directory (A)"),
    run_b: Path = typer.Argument(..., help="candidate run directory (B)"),
    html: bool = typer.Option(False, "--html", help="also write compare-<A>.html into B's directory"),
    fail_on: str = typer.Option(
        None, "--fail-on", help="regression: exit 1 if a throughput of B is slower beyond --tolerance, 3 if undecided"
    ),
    tolerance: str = typer.Option(None, "--tolerance", help="with --fail-on: slowdown allowed (default 3%)"),
) -> int:
    """Ratio B/A of medians per matched cell and metric, with a bootstrap 95% interval."""
    from harness.ab.experiment import EXIT_OK, EXIT_REGRESSION, EXIT_UNDECIDED
    from harness.ab.sequential import DEFAULT_TOLERANCE
    from harness.analysis.comparison import compare_runs
    from harness.analysis.gating import parse_tolerance
    from harness.report.terminal import render_compare

    if fail_on is not None and fail_on not in FAIL_ON:
        raise UserError(f"--fail-on {fail_on!r}: allowed: {', '.join(FAIL_ON)}")
    tol = parse_tolerance(tolerance) if tolerance is not None else DEFAULT_TOLERANCE
    comparison = compare_runs(run_a, run_b, decision_tolerance=tol)
    render_compare(comparison)
    if html:
        from harness.report.compare_html import render_compare as render_html
        from harness.runs.files import write_atomic

        path = run_b / f"compare-{run_a.resolve().name}.html"
        write_atomic(path, render_html(comparison), "the comparison's report")
        print(f"comparison: {path}")
    if fail_on is None:
        return EXIT_OK
    decisions = [r["decision"] for r in comparison.rows if r.get("decision")]
    regressions, undecided = decisions.count("regression"), decisions.count("undecided")
    print(
        f"--fail-on regression: {regressions} throughput(s) slower beyond {100 * tol:g} %, {undecided} undecided, "
        f"{decisions.count('ok')} within it (Welch 95 % interval of the log-ratio over the repeats)"
    )
    if regressions:
        return EXIT_REGRESSION
    return EXIT_UNDECIDED if undecided else EXIT_OK
