"""The USL over a run's scaling groups (harness.analysis.scaling): fitted once on the view,
read alike by the terminal, summary.md, summary.csv, report.html and NEGATIVE_SCALING; a
doubted rate is not fitted."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from harness.analysis import scaling, usl
from harness.diagnosis import diagnose
from harness.report import figures
from harness.runs.store import RunStore
from harness.runs.view import build_view
from tests.harness.report_data import META
from tests.records import make_record

WORKERS = [1, 2, 4, 8, 16]
CURVES = {"threads": usl.Usl(10.0, 0.05, 0.015), "processes": usl.Usl(10.0, 0.1, 0.0)}  # peak 7.96; Amdahl


def scaling_records(curves=CURVES, workers=WORKERS, repeats=3, noise=0.02, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for backend, curve in curves.items():
        for n in workers:
            params = {"backend": backend, "workers": n}
            for repeat in range(repeats):
                rate = float(curve.rate(n) * np.exp(rng.normal(0.0, noise)))
                out.append(make_record(f"{backend}-{n}", {"games_per_s": rate}, params, repeat=repeat))
    return out


def stored(root, records):
    cells = {r.id: {"id": r.id, "suite": r.suite, "params": r.params, "repeats": 3} for r in records}
    store = RunStore.create(root, "usl", {**META, "label": "usl", "cells": list(cells.values())})
    for rec in records:
        store.append(rec)
    return store.root


def test_each_group_is_fitted_once_and_says_what_the_curve_is():
    view = build_view(scaling_records(), META)
    groups = scaling.fits(view)
    assert scaling.fits(view) is groups is view.scaling
    by = {g.label: g for g in groups}
    assert set(by) == {"backend=threads", "backend=processes"}
    threads, processes = by["backend=threads"], by["backend=processes"]
    assert threads.fit.ok and threads.rate == "games_per_s"
    assert threads.fit.peak.value == pytest.approx(CURVES["threads"].peak, rel=0.1)
    assert processes.fit.ok and processes.fit.kappa.low == 0 and processes.fit.peak is None
    line = scaling.line(threads)
    assert line.startswith("USL demo backend=threads (games_per_s over workers 1, 2, 4, 8, 16, 3 repeats): sigma ")
    assert re.search(r"peak at [\d.]+ \[[\d.]+-[\d.]+\] workers, [\d.]+ \[[\d.]+-[\d.]+\] games_per_s", line)
    assert "no peak: kappa's interval holds 0" in scaling.line(processes)
    assert scaling.of_cells(view, threads.cell_ids) is threads


def test_every_writer_reads_the_one_fit(tmp_path, cli, monkeypatch):
    run_dir = stored(tmp_path / "runs", scaling_records())
    calls = []
    real = usl.fit
    monkeypatch.setattr(usl, "fit", lambda *a, **k: calls.append(1) or real(*a, **k))
    shown = cli("report", run_dir, "--csv", "--html", "--markdown")
    assert shown.exit_code == 0, shown.output
    assert len(calls) == 2  # two groups, fitted once for the terminal, files and rules together
    view = build_view(RunStore.open(run_dir).records(), META)
    lines = [scaling.line(g) for g in scaling.fits(view)]
    flat = " ".join(shown.output.split())
    for line in lines:
        assert line in flat  # the terminal (folded at its width)
    markdown = (run_dir / "summary.md").read_text()
    assert all(f"- {line}" in markdown for line in lines)
    page = (run_dir / "report.html").read_text()
    assert page.count('class="note usl"') == 2 and '"meta":"usl-band"' in page.replace(" ", "")
    summary = pd.read_csv(run_dir / "summary.csv").set_index("id")
    threads = summary.loc[[f"threads-{n}" for n in WORKERS]]
    assert set(threads["usl_status"]) == {"fits"} and set(threads["usl_rate"]) == {"games_per_s"}
    assert threads["usl_kappa"].nunique() == 1 and (threads["usl_kappa_low"] > 0).all()
    assert threads["usl_peak_workers"].iloc[0] == pytest.approx(scaling.fits(view)[0].fit.peak.value)
    assert (threads["usl_fitted_rate_low"] <= threads["usl_fitted_rate"]).all()
    assert (threads["usl_fitted_rate"] <= threads["usl_fitted_rate_high"]).all()
    assert summary.loc["processes-4", "usl_peak_workers"] != summary.loc["processes-4", "usl_peak_workers"]  # NaN


def test_negative_scaling_quotes_kappa_and_the_peak():
    records = scaling_records({"threads": CURVES["threads"]}, workers=[1, 2, 4, 8, 16, 32])
    (found,) = [f for f in diagnose(records, META) if f.rule == "NEGATIVE_SCALING"]
    assert re.search(
        r"the USL puts kappa at [\d.]+ \[[\d.]+-[\d.]+\] and the peak at [\d.]+ \[[\d.]+-[\d.]+\] workers", found.hint
    )
    assert found.evidence["usl"].startswith("sigma ")
    json.dumps(found.to_json())


def test_a_rate_that_failed_its_checks_is_not_fitted():
    records = scaling_records({"threads": CURVES["threads"]}, workers=[1, 2, 4, 8, 16, 32])
    for rec in records:
        # a program's counter, read by the readers (a suite's own counts carry no check)
        rec.metrics.update(headline_provenance="from `games` (a table), a level", headline_rate="games_per_s")
        if rec.params["workers"] == 16:
            rec.metrics["headline_check"] = "failed"
    view = build_view(records, META)
    (group,) = scaling.fits(view)
    assert group.fit.status == usl.REFUSED and group.fit.model is None
    line = scaling.line(group)
    assert "not fitted: games_per_s: its check failed: no counter passed (cell " in line, line
    assert line.endswith("a curve through it would be a guess"), line
    with pytest.raises(ValueError):
        group.fit.predict([4])
    assert scaling.summary_columns(view)["threads-4"]["usl_sigma"] is None


def test_a_lesser_doubt_rides_along():
    records = scaling_records({"threads": CURVES["threads"]})
    for rec in records:
        rec.metrics.update(headline_provenance="from `games` (a table), a level", headline_rate="games_per_s")
        if rec.params["workers"] == 2:
            rec.metrics["headline_check"] = "few reports"
    (group,) = scaling.fits(build_view(records, META))
    line = scaling.line(group)
    assert group.fit.ok and "warning: the rate carries doubts (games_per_s: it rests on few reports" in line, line


def test_two_counts_say_too_few_and_draw_no_curve():
    records = scaling_records({"threads": CURVES["threads"]}, workers=[1, 2])
    view = build_view(records, META)
    (group,) = scaling.fits(view)
    assert group.fit.status == usl.TOO_FEW and "too few counts: 2 worker counts" in scaling.line(group)
    fig = figures.scaling_figure(records, "games_per_s", 2, scaling.fits(view))
    assert not any(str(t.get("meta", "")).startswith("usl") for t in fig["data"])


def test_the_chart_draws_the_band_and_dashes_the_curve_past_the_counts():
    records = scaling_records()
    view = build_view(records, META)
    fig = figures.scaling_figure(records, "games_per_s", 2, scaling.fits(view))
    metas = [t.get("meta") for t in fig["data"]]
    assert metas.count("usl-band") == 4 and metas.count("usl-curve") == 2 and metas.count("usl-extrapolated") == 2
    upper = [t for t in fig["data"] if t.get("fill") == "tonexty"]
    assert len(upper) == 2 and all(fig["data"][fig["data"].index(t) - 1]["meta"] == "usl-band" for t in upper)
    past = [t for t in fig["data"] if t.get("meta") == "usl-extrapolated"]
    assert all(t["line"]["dash"] == "dash" and min(t["x"]) == 16 and max(t["x"]) >= 32 for t in past)
    solid = [t for t in fig["data"] if t.get("meta") == "usl-curve"]
    assert all("dash" not in t["line"] and max(t["x"]) == 16 for t in solid)
    assert "USL fit, its 95 % band" in fig["layout"]["title"]["text"]
