"""Dashboard exports, each checked against its documented schema: Bencher Metric Format
(the JSON schema bencher.dev publishes) and github-action-benchmark's custom JSON (the
BenchmarkResult of its extract.ts: name, unit, value, optional range and extra strings)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from tests.harness.constructed_runs import cells, make_run

# https://bencher.dev/docs/reference/bencher-metric-format ("BMF JSON Schema")
BMF_SCHEMA = {
    "$id": "https://bencher.dev/bmf.json",
    "$schema": "http://json-schema.org/draft-07/schema",
    "type": "object",
    "patternProperties": {
        ".+": {
            "type": "object",
            "patternProperties": {
                ".+": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "number"},
                        "lower_value": {"type": "number"},
                        "upper_value": {"type": "number"},
                    },
                    "required": ["value"],
                }
            },
        }
    },
}

# github-action-benchmark: the custom tools read an array of BenchmarkResult
GITHUB_ACTION_SCHEMA = {
    "type": "array",
    "minItems": 1,
    "items": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "unit": {"type": "string"},
            "value": {"type": "number"},
            "range": {"type": "string"},
            "extra": {"type": "string"},
        },
        "required": ["name", "unit", "value"],
        "additionalProperties": False,
    },
}


@pytest.fixture
def run(tmp_path):
    return make_run(tmp_path / "run", cells(), repeats=3)


def test_bmf_export_matches_bencher_schema_and_the_run(cli, run, tmp_path):
    out = tmp_path / "bmf.json"
    result = cli("export", run, "--bmf", out)
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    jsonschema.validate(document, BMF_SCHEMA)
    assert len(document) == 2  # one benchmark per cell
    for measures in document.values():
        m = measures["units_per_s"]
        assert m["lower_value"] <= m["value"] <= m["upper_value"]


def test_github_action_export_matches_its_schema_one_direction_per_file(cli, run, tmp_path):
    out = tmp_path / "gab.json"
    result = cli("export", run, "--github-action", out)
    assert result.exit_code == 0, result.output
    entries = json.loads(out.read_text())
    jsonschema.validate(entries, GITHUB_ACTION_SCHEMA)
    assert {e["unit"] for e in entries} == {"units/s"}
    assert all("customBiggerIsBetter" in e["extra"] for e in entries)
    assert all("over 3 repeats" in e["range"] for e in entries)


def test_github_action_refuses_to_mix_directions(cli, tmp_path):
    from harness.runs.store import RunStore
    from tests.records import make_record

    store = RunStore.create(tmp_path, "t", {"cells": []})
    store.append(make_record("a", {"units_per_s": 5.0, "wait_ms_p95": 2.0}, suite="demo"))
    out = tmp_path / "gab.json"
    mixed = cli("export", store.root, "--github-action", out, "--metric", "units_per_s", "--metric", "wait_ms_p95")
    assert mixed.exit_code == 2 and "one direction per file" in mixed.output and not out.exists()
    lower = cli("export", store.root, "--github-action", out, "--metric", "wait_ms_p95")
    assert lower.exit_code == 0
    (entry,) = json.loads(out.read_text())
    assert entry["unit"] == "ms" and "customSmallerIsBetter" in entry["extra"]


def test_export_without_a_format_names_every_flag(cli, run):
    result = cli("export", run)
    assert result.exit_code == 2
    assert all(flag in result.output for flag in ("--pyperf", "--bmf", "--github-action"))
