"""report.html in a real browser: headless Chromium through Playwright for Python.

Needs the Debian package `chromium` (.ci/run installs it) and the `playwright` Python
package (the dev extra); Playwright's own browser downloads are not used. Skips, saying
what is missing, where either is absent.
"""

import base64
import os
import shutil
from pathlib import Path

import pytest

from harness.runs.store import RunStore
from tests.conftest import run_dirs
from tests.harness.report_data import FINDINGS, XSS, make_run, viewed

pytestmark = pytest.mark.slow


def _chromium() -> str | None:
    for candidate in (os.environ.get("HARNESS_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


SPEC = f"""
label = "{XSS}"
warmup = 0.2
duration = 0.7
timeout = 30

[[matrix]]
suite = "synthetic"
params = {{ kind = "spin", workers = [1, 2] }}

[[matrix]]
suite = "synthetic"
params = {{ kind = "spin", workers = 1, fail = "raise", fail_after_s = 0 }}

[[matrix]]
suite = "command"
params = {{ argv = "{XSS}" }}
"""

# Decodes the screenshot in a blank page and measures how much its pixels vary.
PIXEL_STATS_JS = """async (data) => {
  const img = new Image();
  img.src = "data:image/png;base64," + data;
  await img.decode();
  const canvas = document.createElement("canvas");
  canvas.width = img.width; canvas.height = img.height;
  const ctx = canvas.getContext("2d");
  ctx.drawImage(img, 0, 0);
  const px = ctx.getImageData(0, 0, img.width, img.height).data;
  let n = 0, sum = 0, sq = 0, inked = 0;
  for (let i = 0; i < px.length; i += 4) {
    const y = 0.299 * px[i] + 0.587 * px[i + 1] + 0.114 * px[i + 2];
    n++; sum += y; sq += y * y; if (y < 200) inked++;
  }
  const mean = sum / n;
  return {std: Math.sqrt(sq / n - mean * mean), inked: inked / n, width: img.width};
}"""


# Every element whose right edge passes the page's width, unless a scrolling (or clipping)
# box holds it: those scroll on purpose (the wide cells tables) and do not widen the page.
OVERFLOW_JS = """() => {
  const width = document.documentElement.clientWidth;
  const held = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll" || o === "hidden" || o === "clip") return true;
    }
    return false;
  };
  const bad = [];
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > width + 1 && !held(el)) bad.push(`${el.tagName}.${el.className} right=${Math.round(r.right)}`);
  }
  const clipped = Array.from(document.querySelectorAll("table.findings, table.meta"))
    .filter((t) => t.scrollWidth > t.clientWidth + 1).map((t) => t.className);
  return {page: document.documentElement.scrollWidth, width, bad: bad.slice(0, 10), clipped};
}"""

# A finding with everything long: many cells, nested evidence with an interval, a long remedy.
WIDE_FINDING = {
    "severity": "warning",
    "rule": "NEGATIVE_SCALING",
    "cells": [f"cell{i:02d}abcdef" for i in range(12)],
    "evidence": {
        "rate": "games_per_s",
        "medians": {str(w): 10.4 / (1 + w / 32) for w in (4, 8, 32, 128)},
        "drops": [
            {"metric": "games_per_s", "before": 10.437, "before_at": 4, "after": 3.9912, "after_at": 128,
             "at": "workers", "ratio": 0.3824125537760623, "low": 0.3137760623017959, "high": 0.4537760623017959},
        ],
        "an_unbroken_identifier": "x" * 120,
    },
    "hint": "games_per_s falls from 10.4 at 4 workers to 3.99 at 128 (0.38x): " + "more workers only add contention " * 8,
}  # fmt: skip


@pytest.fixture(scope="module")
def page():
    """One page for the module: navigating it again lets Chromium reuse its compile of the
    inlined plotly.js (4 MB), which is most of the time a report takes to load."""
    executable = _chromium()
    if executable is None:
        pytest.skip("chromium not found at /usr/bin/chromium (apt-get install chromium, or set HARNESS_CHROMIUM)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install -e '.[dev]')")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        )
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        yield page
        browser.close()


def open_report(page, path: Path, screenshot: Path | None = None) -> dict:
    problems: list[str] = []
    handlers = {
        "pageerror": lambda exc: problems.append(f"page error: {exc}"),
        "console": lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None,
        "dialog": lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()),
    }
    for event, handler in handlers.items():
        page.on(event, handler)
    page.goto(path.as_uri(), wait_until="load")
    charts = page.eval_on_selector_all(
        ".chart", "els => els.map(e => [e.dataset.chart, e.querySelectorAll('.js-plotly-plot .main-svg').length])"
    )
    title = page.inner_text("h1")
    # sort a table by its status column and back: the sorting script runs without errors
    header = page.locator("table.sortable th", has_text="status").first
    header.click()
    header.click()
    shot = page.screenshot(path=str(screenshot) if screenshot else None)
    stats = page.evaluate(PIXEL_STATS_JS, base64.b64encode(shot).decode())
    for event, handler in handlers.items():
        page.remove_listener(event, handler)
    return {"problems": problems, "charts": charts, "title": title, "pixels": stats}


def test_report_of_a_real_sweep_draws_every_chart_in_chromium(page, cli, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    result = cli("sweep", spec, "--out", tmp_path / "out", "--quiet")
    assert result.exit_code == 1, result.output  # two cells fail on purpose
    (run_dir,) = run_dirs(tmp_path / "out")
    report = run_dir / "report.html"
    assert str(report) in result.output
    statuses = sorted(r.status for r in RunStore.open(run_dir).records())
    assert statuses == ["error", "error", "ok", "ok"]
    text = report.read_text()
    assert XSS not in text and "injected failure" in text and "cannot start" in text

    seen = open_report(page, report)
    assert seen["problems"] == []
    kinds = [kind for kind, _ in seen["charts"]]
    assert {"scaling", "throughput-time", "cpu"} <= set(kinds), kinds
    assert all(drawn > 0 for _, drawn in seen["charts"]), seen["charts"]
    assert XSS in seen["title"]  # shown as text, not run as a script
    assert seen["pixels"]["std"] > 10 and seen["pixels"]["inked"] > 0.01, seen["pixels"]


def test_histograms_gpu_timelines_and_findings_draw_in_chromium(page, tmp_path):
    from harness.report.html import write_html

    run_dir = make_run(tmp_path, XSS, fail="c-local-2")
    store = RunStore.open(run_dir)
    report = write_html(run_dir, viewed(store, FINDINGS))
    seen = open_report(page, report)
    assert seen["problems"] == []
    kinds = [kind for kind, _ in seen["charts"]]
    assert kinds.count("gpu") == 2 and "histogram" in kinds and "scaling" in kinds, kinds
    assert all(drawn > 0 for _, drawn in seen["charts"]), seen["charts"]
    assert seen["pixels"]["std"] > 10, seen["pixels"]


@pytest.mark.parametrize("width", [1024, 1400, 1920])
def test_report_lays_out_without_horizontal_overflow(page, tmp_path, width):
    from harness.report.html import write_html

    run_dir = make_run(tmp_path, XSS, fail="c-local-2")
    store = RunStore.open(run_dir)
    report = write_html(run_dir, viewed(store, [WIDE_FINDING, *FINDINGS]))
    page.set_viewport_size({"width": width, "height": 900})
    try:
        page.goto(report.as_uri(), wait_until="load")
        layout = page.evaluate(OVERFLOW_JS)
        shot = tmp_path / f"findings-{width}.png"
        page.locator("#findings").screenshot(path=str(shot))
    finally:
        page.set_viewport_size({"width": 1280, "height": 1000})
    assert layout["page"] <= layout["width"], layout
    assert layout["bad"] == [] and layout["clipped"] == [], layout
    assert shot.stat().st_size > 10_000  # the findings table was drawn
    text = page.inner_text("#findings")
    assert "games_per_s 10.44 @4 -> 3.991 @128 workers (0.3824x, 95 % CI 0.3138-0.4538)" in text


# The scaling chart's fitted band and curves as Chromium drew them: the band a filled path,
# the part past the counts measured a dashed line (plotly.js's own SVG classes).
USL_DRAWN_JS = """() => {
  const chart = document.querySelector('.chart[data-chart="scaling"]');
  const fills = Array.from(chart.querySelectorAll('path.js-fill')).filter((p) => (p.getAttribute('d') || '').length > 20);
  const dashed = Array.from(chart.querySelectorAll('path.js-line'))
    .filter((p) => /stroke-dasharray/.test(p.getAttribute('style') || '') && (p.getAttribute('d') || '').length > 20);
  const box = fills.length ? fills[0].getBBox() : {width: 0, height: 0};
  const legend = Array.from(chart.querySelectorAll('.legendtext')).map((t) => t.textContent);
  return {fills: fills.length, dashed: dashed.length, width: box.width, height: box.height, legend};
}"""


def test_the_scaling_fit_and_its_band_are_drawn_in_chromium(page, tmp_path):
    from harness.report.html import write_html
    from harness.runs.view import build_view
    from tests.harness.test_scaling import scaling_records, stored

    run_dir = stored(tmp_path / "runs", scaling_records())
    report = write_html(run_dir, build_view(RunStore.open(run_dir).records(), RunStore.open(run_dir).meta()))
    seen = open_report(page, report)
    assert seen["problems"] == []
    drawn = page.evaluate(USL_DRAWN_JS)
    assert drawn["fills"] == 2 and drawn["dashed"] == 2, drawn  # one band and one dashed tail per backend
    assert drawn["width"] > 100 and drawn["height"] > 5, drawn  # a band, not a hairline
    assert "backend=threads: USL 95 % band" in drawn["legend"] and "backend=threads: USL fit" in drawn["legend"]
    assert "USL demo backend=threads (games_per_s over workers 1, 2, 4, 8, 16" in page.inner_text("#suite-demo")
