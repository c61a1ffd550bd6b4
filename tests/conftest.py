"""Shared fixtures: run the CLI in-process, and find processes a test left behind."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest
from typer.testing import CliRunner

from harness.cli import app


@pytest.fixture
def cli():
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)

    return invoke


def run_dirs(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if p.is_dir())


def read_records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "cells.jsonl").read_text().splitlines() if line.strip()]


def processes_mentioning(text: str) -> list[psutil.Process]:
    """Live processes whose command line mentions `text` (a test's unique tmp path)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and text in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            pass
    return found
