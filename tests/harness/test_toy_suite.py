"""A suite defined in one test file, registered from outside: it is listed, swept, charted
and diagnosed through its vocabulary alone (docs/architecture.md, "How to add a suite")."""

from __future__ import annotations

import json

import pytest

from harness.model import registry
from tests.conftest import run_dirs

TOY = "toy=tests.toys.toy_suite:SUITE"


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setenv(registry.ENV_SUITES, TOY)
    for cached in (registry.discover, registry.vocabulary_of, registry.suite_defaults):
        cached.cache_clear()
    yield
    for cached in (registry.discover, registry.vocabulary_of, registry.suite_defaults):
        cached.cache_clear()


@pytest.mark.slow
def test_a_toy_suite_is_listed_swept_charted_and_diagnosed(toy, cli, tmp_path):
    listed = cli("suites")
    assert listed.exit_code == 0 and "toy: sleeping lanes" in listed.output and "contention" in listed.output
    args = ("sweep", "--suite", "toy", "--workers", "1,4", "--set", "contention=0,2", "--set", "unit_ms=4")
    result = cli(*args, "--duration", "1.2", "--warmup", "0.2", "--out", tmp_path, "--quiet")
    assert result.exit_code == 0, result.output
    (run_dir,) = run_dirs(tmp_path)
    records = [json.loads(line) for line in (run_dir / "cells.jsonl").read_text().splitlines()]
    assert sorted(r["params"]["lanes"] for r in records) == [1, 1, 4, 4]  # --workers set the toy's lanes
    assert all(r["status"] == "ok" and r["metrics"]["widgets_per_s"] > 0 for r in records)
    page = (run_dir / "report.html").read_text()
    toy_section = page.split('id="suite-toy"')[1]
    assert 'data-chart="scaling"' in toy_section and "widgets_per_s against lanes" in toy_section
    findings = json.loads(cli("diagnose", run_dir, "--json").output)
    scaling = [f for f in findings if f["rule"] == "NEGATIVE_SCALING"]
    assert len(scaling) == 1, findings  # contention=2: 4 lanes make fewer widgets than 1
    contended = {r["id"] for r in records if r["params"]["contention"] == 2}
    assert set(scaling[0]["cells"]) == contended and scaling[0]["evidence"]["rate"] == "widgets_per_s"


def test_harness_suites_names_a_broken_registration(monkeypatch, cli):
    monkeypatch.setenv(registry.ENV_SUITES, "toy=tests.toys.nosuch:SUITE")
    registry.discover.cache_clear()
    try:
        result = cli("suites")
        assert result.exit_code == 0 and "toy" in result.output and "could not be loaded" in result.output
    finally:
        registry.discover.cache_clear()
