"""Reports from constructed runs: CSVs read back, escaping, markdown, compare verdicts."""

import io
import subprocess
import sys

import pandas as pd

from harness.analysis.comparison import compare_runs
from harness.model.registry import vocabulary_of
from harness.model.vocabulary import direction
from harness.report.compare_html import render_compare
from harness.report.csv import write_csv
from harness.report.html import render_run
from harness.report.markdown import render as render_markdown
from harness.runs.store import RunStore
from harness.runs.view import build_view
from tests.harness.report_data import FINDINGS, XSS, make_run, record, viewed

ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def _report(run_dir, findings=None):
    store = RunStore.open(run_dir)
    return render_run(run_dir, viewed(store, findings))


def test_csvs_read_back_without_options_with_units_in_names(tmp_path):
    records = [
        record(
            "a", 0, {"workers": 2, "shape": [1, 2]}, {"games_per_s": 3.5, "rss_peak_mb": 10.0, "batch_hist": {"1": 2}}
        ),
        record("a", 1, {"workers": 2, "shape": [1, 2]}, {"games_per_s": 4.5, "rss_peak_mb": 12.0}),
        record("b", 0, {"workers": 4, "shape": [1, 2]}, {}, status="error", reason='Boom: "quoted", comma\nnewline'),
    ]
    write_csv(tmp_path, build_view(records))
    cells = pd.read_csv(tmp_path / "cells.csv")
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert len(cells) == 3 and len(summary) == 2
    assert {"games_per_s", "rss_peak_mb", "workers", "status", "reason"} <= set(cells.columns)
    assert "batch_hist" not in cells.columns  # nested values stay in cells.jsonl
    assert {"games_per_s_median", "games_per_s_min", "games_per_s_max", "repeats", "ok"} <= set(summary.columns)
    assert summary.loc[summary["id"] == "a", "games_per_s_median"].item() == 4.0
    assert cells.loc[2, "reason"] == 'Boom: "quoted", comma\nnewline'
    assert cells.loc[0, "shape"] == "[1, 2]"  # JSON, not a Python repr
    write_csv(tmp_path, build_view([]))  # an empty run still writes readable headers
    assert list(pd.read_csv(tmp_path / "cells.csv").columns) == ["id", "suite", "repeat", "status", "reason"]


def test_direction_follows_metric_names_and_the_suites_declarations():
    higher = ["iterations_per_s", "games_per_min", "nn_evals_per_s", "batch_mean", "batch_p95"]
    lower = ["wait_ms_p95", "pipe_rtt_us_p50", "wall_s", "rss_peak_mb", "gpu_mem_peak_mb", "policy_lag_mean"]
    neither = [
        "gpu_util_mean",
        "cpu_util_mean",
        "games",
        "iterations_per_s_drift_pct_per_min",
        "batch_hist",
        "x_us_count",
    ]
    assert [direction(m) for m in higher] == ["higher"] * len(higher)
    assert [direction(m) for m in lower] == ["lower"] * len(lower)
    assert [direction(m) for m in neither] == [None] * len(neither)
    # quality metrics are declared by their suites, not guessed from their names
    assert direction("nash_conv") is None and vocabulary_of("mccfr").direction("nash_conv") == "lower"
    assert direction("mean_return") is None and vocabulary_of("actor_learner").direction("mean_return") == "higher"


def test_user_strings_are_escaped_in_report_markdown_and_compare(tmp_path, cli):
    run_a = make_run(tmp_path / "a", XSS)
    run_b = make_run(tmp_path / "b", XSS, fail="c-local-2")
    page = _report(run_a, FINDINGS)
    assert XSS not in page and ESCAPED in page
    assert page.count("<script>") == page.count("</script>")  # only our own, balanced script elements
    store = RunStore.open(run_a)
    markdown = render_markdown(viewed(store, FINDINGS))
    assert XSS not in markdown and ESCAPED in markdown
    compared = render_compare(compare_runs(run_a, run_b))
    assert XSS not in compared and ESCAPED in compared
    result = cli("compare", run_a, run_b, "--html")
    assert result.exit_code == 0, result.output
    assert XSS in result.output  # the terminal shows the text itself, as text (rich markup escaped)
    (html_file,) = run_b.glob("compare-*.html")
    assert XSS not in html_file.read_text()


def test_report_shows_failed_and_never_run_cells_and_findings(tmp_path):
    run_dir = make_run(tmp_path, "plain")
    page = _report(run_dir, FINDINGS)
    assert 'class="status-timeout"' in page and "no result within 4 s" in page
    assert 'class="status-not-run"' in page and "harness sweep --resume" in page
    assert "SMALL_BATCHES" in page and 'href="#cell-c-server"' in page and 'id="cell-c-server"' in page
    for kind in ("scaling", "throughput-time", "histogram", "gpu", "cpu"):
        assert f'data-chart="{kind}"' in page, kind
    assert page.count("window.PlotlyConfig") == 1  # plotly.js is inlined once, for the first chart ...
    assert page.count("Plotly.newPlot") >= 5  # ... and every chart draws with it
    assert "cdn.plot.ly" not in page.split("<body>")[0]
    assert "No diagnosis was run" in _report(run_dir) and "No findings" in _report(run_dir, [])


def test_report_command_writes_html_markdown_and_csv(tmp_path, cli):
    run_dir = make_run(tmp_path, "plain")
    result = cli("report", run_dir, "--html", "--markdown", "--csv")
    assert result.exit_code == 0, result.output
    for name in ("report.html", "summary.md", "summary.csv", "cells.csv"):
        assert (run_dir / name).is_file() and str(run_dir / name) in result.output
    table = (run_dir / "summary.md").read_text()
    assert "| c-bad |" in table and "**timeout**" in table and "## Findings" in table
    frame = pd.read_csv(io.StringIO((run_dir / "summary.csv").read_text()))
    assert len(frame) == 7  # six cells and the timed-out one; the never-run cell has no record
    missing = cli("compare", tmp_path / "nothing", run_dir)
    assert missing.exit_code == 2 and "not a run directory" in missing.output


def test_compare_marks_better_worse_same_and_lists_unmatched(tmp_path):
    run_a = make_run(tmp_path / "a", "base", drop="c-server-2")
    run_b = make_run(
        tmp_path / "b", "cand", scale=2.0, latency_scale=2.0, drop="c-server-1", add="c-new", fail="c-local-1"
    )
    comparison = compare_runs(run_a, run_b)
    rows = {(r["id"], r["metric"]): r for r in comparison.rows}
    assert rows[("c-local", "games_per_s")]["verdict"] == "better"
    assert rows[("c-local", "games_per_s")]["ratio"] == 2.0
    assert rows[("c-local", "wait_ms_p95")]["verdict"] == "worse"
    assert rows[("c-local", "mem_pss_peak_mb")]["verdict"] == "same"
    assert rows[("c-local", "cpu_util_mean")]["verdict"] == "n/a"
    assert [c["id"] for c in comparison.only_a] == ["c-server-1"]
    assert [c["id"] for c in comparison.only_b] == ["c-server-2", "c-new"]
    assert [c["id"] for c in comparison.unusable] == ["c-local-1", "c-bad"]


def test_harness_load_is_lazy_and_returns_one_row_per_repeat(tmp_path):
    run_dir = make_run(tmp_path, "plain")
    code = (
        "import sys, harness; assert 'pandas' not in sys.modules; "
        f"frame = harness.load({str(run_dir)!r}); print(len(frame), 'pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["19", "True"]
