"""`harness ab` and `harness gate --against` on a real git repository: two tiny commits of a
toy suite whose widgets cost three times as much in the second, A/B'd through temporary
worktrees; bad input exits 2 before anything runs; nothing (worktree, process) is left.

The toy sleeps instead of spinning, so its rate is its own and not the busy machine's: the
A/B decides within a few blocks, and the test stays short."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cell.processes import PACKAGE_ROOT
from harness.model import registry
from tests.conftest import processes_mentioning, run_dirs

TOY = '''
"""A/B toy: lanes sleep unit_ms x COST per widget."""
import threading
import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.probe import Rate, Suite, Vocabulary

COST = {cost}


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    lanes: int = Field(4, ge=1, description="threads")
    unit_ms: float = Field(20.0, gt=0, description="ms per widget")
    device: Literal["cpu", "cuda"] = Field("cpu", description="where it would run")
    wall_timeout: float = Field(0.0, ge=0, description="a wall-clock deadline inside the workload")


def run(params, probe):
    stop = threading.Event()

    def lane():
        while not stop.is_set():
            time.sleep(params.unit_ms * COST / 1000)
            probe.count("widgets")

    threads = [threading.Thread(target=lane, daemon=True) for _ in range(params.lanes)]
    for thread in threads:
        thread.start()
    probe.phase("warmup")
    try:
        while not probe.should_stop():
            time.sleep(0.01)
    finally:
        stop.set()


def sliceable(params):
    return f"wall_timeout={{params.wall_timeout}} s would fire during a stop" if params.wall_timeout else None


SUITE = Suite("abtoy", "A/B toy", Params, run, vocabulary=Vocabulary(rates=(Rate("widgets"),), sliceable=sliceable))
'''


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository with two commits of the toy: COST 1.0, then 3.0 (a third of the widgets/s)."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    for cost in (1.0, 3.0):
        (root / "abtoy.py").write_text(TOY.format(cost=cost))
        git(root, "add", "abtoy.py")
        git(root, "commit", "-qm", f"cost {cost}")
    monkeypatch.chdir(root)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv(registry.ENV_SUITES, "abtoy=abtoy:SUITE")
    sys.modules.pop("abtoy", None)
    caches = (registry.discover, registry.vocabulary_of, registry.suite_defaults)
    for cached in caches:
        cached.cache_clear()
    yield root
    for cached in caches:
        cached.cache_clear()
    sys.modules.pop("abtoy", None)


def assert_nothing_left(repo: Path, tmp_path: Path) -> None:
    assert len(git(repo, "worktree", "list").splitlines()) == 1  # the temporary worktree is gone
    assert not processes_mentioning(str(tmp_path))


@pytest.mark.slow
def test_a_planted_slowdown_between_two_commits_is_a_regression(repo, cli, tmp_path):
    out = tmp_path / "res"
    args = ("ab", "HEAD~1", "--suite", "abtoy", "--pairs", "1", "--warmup-pairs", "0", "--budget", "60", "--seed", "1")
    args = (*args, "--confidence", "0.8")  # a 3x slowdown: the fewest blocks that decide (4) are enough
    args = (*args, "--out", out)
    result = cli(*args)
    assert result.exit_code == 1, result.output
    (run,) = run_dirs(out)
    ab = json.loads((run / "ab.json").read_text())
    (cell,) = ab["cells"]
    assert ab["state"] == "finished" and ab["exit_code"] == 1
    assert ab["base"]["commit"] == git(repo, "rev-parse", "HEAD~1") and ab["candidate"]["rev"] == "working tree"
    assert cell["decision"] == "regression" and cell["metric"] == "widgets_per_s", cell["reason"]
    assert 0.2 < cell["interval"]["ratio"] < 0.5  # each side ran its own commit's toy (1/3)
    assert cell["interval"]["ratio_high"] < 0.97 and len(cell["ab_blocks"]) >= 4
    pairs = [p for b in cell["ab_blocks"] for p in b["pairs"]]
    measured = [p for p in pairs if p["log_ratio"] is not None]
    assert measured and all(p["base"]["window_s"] >= 0.9 and p["cand"]["window_s"] >= 0.9 for p in measured)
    assert "regression" in result.output
    assert_nothing_left(repo, tmp_path)


@pytest.mark.slow
def test_gate_against_a_revision_speed_from_the_ab(repo, cli, tmp_path):
    out = tmp_path / "res"
    sweep = cli("sweep", "--suite", "abtoy", "--duration", "0.5", "--out", out, "--quiet")
    assert sweep.exit_code == 0, sweep.output
    (run,) = run_dirs(out)
    args = ("--budget", "3", "--pairs", "1", "--warmup-pairs", "0", "--min-blocks", "1")
    result = cli("gate", run, "--against", "HEAD~1", *args)
    assert result.exit_code == 3, result.output  # one block is not enough to decide: undecided
    gate = json.loads((run / "gate.json").read_text())
    assert gate["verdict"] == "undecided" and gate["against"]["rev"] == "HEAD~1" and gate["baseline"] is None
    (speed,) = [c for c in gate["checks"] if c["kind"] == "speed"]
    assert speed["verdict"] == "undecided" and speed["metric"] == "widgets_per_s" and 0.2 < speed["ratio"] < 0.5
    assert "no decision is possible before 6 blocks at 95 % (--min-blocks)" in json.dumps(gate)
    assert (run / "ab.json").is_file() and "A/B against HEAD~1" in (run / "gate.md").read_text()
    assert cli("gate", run).exit_code == 2  # neither --baseline nor --against
    assert_nothing_left(repo, tmp_path)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["ab", "nosuchrev", "--suite", "abtoy"], "not a commit"),
        (["ab", "HEAD~1"], "nothing to compare"),
        (["ab", "HEAD~1", "--suite", "abtoy", "--set", "device=cuda"], "device=cuda: a GPU"),
        (["ab", "HEAD~1", "--suite", "abtoy", "--set", "wall_timeout=2"], "suite abtoy says: wall_timeout=2.0 s"),
        (["ab", "HEAD~1", "--suite", "abtoy", "--budget", "-1"], "--budget -1"),
        (["ab", "HEAD~1", "--suite", "abtoy", "--min-blocks", "-1"], "--min-blocks -1: 0 to 1000"),
        (["ab", "HEAD~1", "--suite", "abtoy", "--tolerance", "150%"], "below 100%"),
        (["ab", "HEAD~1", "--suite", "abtoy", "--confidence", "1.5"], "--confidence 1.5"),
        (["ab", "HEAD~1", "HEAD", "nosuch", "--suite", "abtoy"], "unexpected argument 'nosuch'"),
        (["ab", "HEAD~1", "--suite", "abtoy", "--set", "lanes=0"], "lanes"),
    ],
)
def test_bad_input_exits_2_before_anything_runs(repo, cli, tmp_path, args, words):
    result = cli(*args, "--out", tmp_path / "res")
    assert result.exit_code == 2, result.output
    assert words in result.output and "Traceback" not in result.output, result.output
    assert not (tmp_path / "res").exists()
    assert_nothing_left(repo, tmp_path)


def test_outside_a_git_repository_exits_2(repo, cli, tmp_path, monkeypatch):
    elsewhere = tmp_path / "plain"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = cli("ab", "HEAD~1", "--suite", "abtoy", "--out", tmp_path / "res")
    assert result.exit_code == 2 and "not inside a git repository" in result.output, result.output


@pytest.mark.slow
def test_ctrl_c_leaves_no_worktree_and_no_process(repo, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), PACKAGE_ROOT])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "ab", "HEAD~1", "--suite", "abtoy", "--out", str(tmp_path / "res")],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(processes_mentioning(str(tmp_path))) < 3:
        time.sleep(0.1)  # the A/B and a side's cell are running
    assert len(git(repo, "worktree", "list").splitlines()) == 2
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, output
    ab = (
        json.loads(next((tmp_path / "res").glob("*/ab.json")).read_text())
        if list((tmp_path / "res").glob("*/ab.json"))
        else None
    )
    assert ab is None or ab["state"] == "interrupted"
    time.sleep(0.5)
    assert_nothing_left(repo, tmp_path)


def test_positional_arguments_and_options(tmp_path):
    from harness.commands.ab import build_options, split_positionals
    from harness.errors import UserError

    spec = tmp_path / "quick.toml"
    spec.write_text("")
    assert split_positionals([]) == (None, None)
    assert split_positionals(["HEAD~2"]) == ("HEAD~2", None)
    assert split_positionals([str(spec)]) == (None, spec)
    assert split_positionals(["main", "configs/other.toml"]) == ("main", Path("configs/other.toml"))
    with pytest.raises(UserError, match="two sweep specs"):
        split_positionals(["a.toml", "b.toml"])
    opts = build_options("5%", 60, 0.9, 2.0, 0.1, 6, 7, 2)
    assert (opts.tolerance, opts.budget_s, opts.seed) == (pytest.approx(0.05), 60, 7)
    assert opts.alpha == pytest.approx(0.1)
    slicing = opts.slicing
    assert (slicing.slice_s, slicing.settle_s, slicing.pairs, slicing.warmup_pairs) == (2.0, 0.1, 6, 2)
    assert slicing.max_slice_s >= 8.0
    for bad in ({"slice_s": 0.1}, {"settle": 9}, {"pairs": 0}, {"seed": -1}, {"warmup_pairs": -1}):
        args = {"tolerance": None, "budget": None, "confidence": 0.95, "slice_s": None, "settle": None,
                "pairs": None, "seed": None, "warmup_pairs": None, **bad}  # fmt: skip
        with pytest.raises(UserError):
            build_options(**args)


def test_each_side_gets_the_cells_explicit_params_and_fills_in_its_own_defaults():
    """A knob added since the base revision, at its default, must not reach the base (it
    would refuse the cell as an unknown key); what the cell names explicitly does."""
    from harness.running.matrix import Overrides, Spec, apply_overrides, expand
    from harness.runs.record import explicit_params

    (cell,) = expand(apply_overrides(Spec(), Overrides(suite="synthetic", axes={"workers": [2]})))
    assert len(cell.params) > 1  # complete: every default filled in
    assert explicit_params(cell.suite, cell.params) == {"workers": 2}
