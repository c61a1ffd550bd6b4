"""One view of a run (harness.runs.view): every output of one run gives the same medians and
the same headline rate, whatever its repeats hold.

The run below has an infinite rate in one repeat (no measurement: a median over the finite
values) and repeats that disagree (a spread warning). summary.csv once took the median with
the infinity in (34 where the terminal's cells said 32); here terminal, summary.csv,
summary.md, report.html, `harness diagnose` and `harness history` must all say 32 and 15.
"""

from __future__ import annotations

import json
import math
import re

import pandas as pd

from harness.report.evidence import number
from harness.runs.store import RunStore
from harness.runs.view import build_view, headline_rate
from tests.harness.report_data import META
from tests.records import make_record

RATES = {"c-one": [30.0, 34.0, math.inf], "c-two": [10.0, 20.0, 15.0]}  # workers 1, then 2
MEDIANS = {"c-one": 32.0, "c-two": 15.0}
RANGES = {"c-one": (30.0, 34.0), "c-two": (10.0, 20.0)}


def _run(root):
    cells, records = [], []
    for workers, (cid, rates) in enumerate(RATES.items(), start=1):
        params = {"workers": workers, "backend": "threads"}
        cells.append({"id": cid, "suite": "demo", "params": params, "repeats": len(rates)})
        for repeat, rate in enumerate(rates):
            metrics = {"games_per_s": rate, "moves_per_s": 40 * rate, "cpu_util_mean": 90.0}
            records.append(make_record(cid, metrics, params, repeat=repeat))
    store = RunStore.create(root, "agree", {**META, "label": "agree", "cells": cells})
    for rec in records:
        store.append(rec)
    return store.root


def test_every_output_of_a_run_gives_the_same_medians_and_headline(tmp_path, cli):
    run_dir = _run(tmp_path / "runs")
    view = build_view(RunStore.open(run_dir).records(), META)
    assert headline_rate(view.records) == "games_per_s" == view.suites["demo"].rate
    assert {c.id: c.median("games_per_s") for c in view.cells} == MEDIANS

    shown = cli("report", run_dir, "--csv", "--html", "--markdown")
    assert shown.exit_code == 0, shown.output
    for cid, median in MEDIANS.items():
        low, high = RANGES[cid]
        assert f"{number(median)} [{number(low)}-{number(high)}]" in shown.output  # the terminal table
    assert "games_per_s spreads 67 % across 3 repeats (10-20, median 15)" in shown.output

    summary = pd.read_csv(run_dir / "summary.csv").set_index("id")
    for cid, median in MEDIANS.items():
        assert summary.loc[cid, "games_per_s_median"] == median
        assert (summary.loc[cid, "games_per_s_min"], summary.loc[cid, "games_per_s_max"]) == RANGES[cid]

    markdown = (run_dir / "summary.md").read_text()
    for cid, median in MEDIANS.items():
        row = next(line for line in markdown.splitlines() if line.startswith(f"| {cid} |"))
        assert f"| {number(median)} |" in row, row

    html = (run_dir / "report.html").read_text()
    first_chart = r'Plotly\.newPlot\(\s*"[^"]*",\s*\[\{"type":"scatter","mode":"lines\+markers","x":\[[^\]]*\],"y":\[([^\]]*)\]'
    scaling = re.search(first_chart, html)  # the scaling chart's medians, workers 1 then 2
    assert scaling is not None and json.loads(f"[{scaling.group(1)}]") == list(MEDIANS.values())
    assert "median 15)" in html  # the spread warning

    found = cli("diagnose", run_dir, "--json")
    negative = [f for f in json.loads(found.output) if f["rule"] == "NEGATIVE_SCALING"]
    assert negative and negative[0]["evidence"]["rate"] == "games_per_s"
    assert negative[0]["evidence"]["medians"] == {"1": MEDIANS["c-one"], "2": MEDIANS["c-two"]}

    history = cli("history", "--results", tmp_path / "runs")
    assert history.exit_code == 0, history.output
    assert "games_per_s" in history.output
    for workers, median in enumerate(MEDIANS.values(), start=1):
        row = next(line for line in history.output.splitlines() if f"workers={workers}" in line)
        assert f" {median:.4g} " in row, row
