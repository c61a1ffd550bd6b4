"""An A/B side's cell runs in that side's tree, so every path handed to it is absolute: with
the default `--out results` (relative), the base revision's cell could not open its result
stream (ENOENT, exit 74) and `harness ab REV -- CMD` ended in an error before any block."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.ab import slicing
from harness.ab.revisions import Side
from harness.running.matrix import Cell


class Launched(Exception):
    """Raised by the stand-in for Popen: what would have been launched, and where."""


def test_a_side_s_cell_gets_absolute_paths_from_a_relative_run_directory(tmp_path, monkeypatch):
    base = tmp_path / "base-tree"
    base.mkdir()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results" / "run" / "series").mkdir(parents=True)
    (tmp_path / "results" / "run" / "logs").mkdir(parents=True)

    def popen(argv, cwd, env, **_):
        raise Launched(argv, cwd, env)

    monkeypatch.setattr(slicing.subprocess, "Popen", popen)
    cell = Cell(suite="synthetic", params={"kind": "spin", "workers": 1}, duration=1.0, warmup=0.0, work=None,
                repeats=1, timeout=60.0)  # fmt: skip
    side = Side(name="base", rev="HEAD~1", commit=None, root=base)
    with pytest.raises(Launched) as launched:
        slicing.Instance(side, cell, "k-base-0", Path("results/run"))
    argv, cwd, env = launched.value.args
    assert Path(cwd) == base
    assert json.loads(argv[-2])["suite"] == "synthetic"
    assert Path(argv[-1]).is_absolute() and Path(argv[-1]).parent == tmp_path / "results" / "run" / "series"
    assert Path(env["HARNESS_RUN"]).is_absolute()
