"""The solver reaches the known game-theoretic values, deterministically per seed.

Every run goes through the suite's driver at a fixed amount of work, as a cell does, and
the tables it ends with are checked. Processes are forked explicitly: with torch loaded
by other tests, `auto` would spawn.
"""

import numpy as np
import pytest

from harness.probe import Probe
from suites.mccfr import Params, run
from suites.mccfr.driver import Solution, run_mccfr
from suites.mccfr.exploitability import exploitability, nash_conv, policy_value


def solve(game: str, iterations: int, **params) -> tuple[Solution, dict, list[float]]:
    """The driver's solution after `iterations`, its metrics, and the exploitability
    checkpoints it reported (with `exploitability_every`)."""
    points = []
    probe = Probe(target_work=iterations, sink=lambda r: points.append(r) if r.get("type") == "point" else None)
    solution = run_mccfr(Params(game=game, start_method="fork", **params), probe)
    metrics = probe.finish()
    assert metrics["work_requested"] == metrics["work_done"] == metrics["iterations"] == iterations
    return solution, metrics, [p["value"] for p in points if p["name"] == "exploitability"]


def tables(game: str, iterations: int, **params) -> np.ndarray:
    solution, _, _ = solve(game, iterations, **params)
    return solution.avg


def test_kuhn_reaches_the_game_value():
    (game, _, avg), metrics, _ = solve("kuhn", 100_000, seed=1)
    assert policy_value(game, avg, 0) == pytest.approx(-1 / 18, abs=0.005)
    assert exploitability(game, avg) < 0.01
    # the driver evaluated the very tables it handed back
    assert metrics["nash_conv"] == pytest.approx(nash_conv(game, avg), abs=1e-12)
    assert metrics["exploitability"] < 0.01


def test_leduc_nash_conv_after_10k_iterations():
    probe = Probe(target_work=10_000)
    run(Params(game="leduc", seed=0), probe)
    metrics = probe.finish()
    assert metrics["iterations"] == 10_000
    assert metrics["nash_conv"] <= 0.8
    assert metrics["exploitability"] == pytest.approx(metrics["nash_conv"] / 2)
    assert metrics["infosets"] == 936


@pytest.mark.parametrize("staleness", [0, 1])
def test_deterministic_per_seed_and_worker_count(staleness):
    a = tables("leduc", 2_000, backend="threads", workers=2, seed=3, staleness=staleness)
    b = tables("leduc", 2_000, backend="threads", workers=2, seed=3, staleness=staleness)
    c = tables("leduc", 2_000, backend="threads", workers=2, seed=4, staleness=staleness)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_staleness_changes_what_workers_see():
    barrier = tables("leduc", 2_000, backend="threads", workers=2, seed=3, staleness=0)
    overlapped = tables("leduc", 2_000, backend="threads", workers=2, seed=3, staleness=1)
    assert not np.array_equal(barrier, overlapped)


@pytest.mark.parametrize("staleness", [0, 1])
def test_one_worker_is_the_sequential_run(staleness):
    # one worker's update is its own change: applying it changes nothing (up to rounding)
    seq = tables("leduc", 1_000, seed=5)
    thr = tables("leduc", 1_000, backend="threads", workers=1, seed=5, staleness=staleness)
    np.testing.assert_allclose(seq, thr, rtol=0, atol=1e-9)


@pytest.mark.parametrize(("sync", "staleness"), [("delta", 0), ("delta", 1), ("delta", 2), ("full", 1)])
def test_processes_and_threads_run_the_same_algorithm(sync, staleness):
    common = {"workers": 2, "sync": sync, "seed": 7, "staleness": staleness}
    thr = tables("leduc", 2_000, backend="threads", **common)
    proc = tables("leduc", 2_000, backend="processes", **common)
    np.testing.assert_array_equal(thr, proc)


@pytest.mark.slow
def test_delta_full_shared_follow_the_same_trend():
    curves = {}
    for sync in ("delta", "full", "shared"):
        _, metrics, checkpoints = solve(
            "leduc", 10_000, backend="processes", workers=2, sync=sync, seed=11, staleness=1, exploitability_every=1_000
        )
        # after 1000, 2000, ... 10000 iterations were merged, then the final evaluation
        assert len(checkpoints) == 11 and checkpoints[-1] == metrics["exploitability"]
        curves[sync] = [2 * checkpoints[0], metrics["nash_conv"]]  # NashConv after 1000 and 10000
    # delta and full are one computation (different payloads); shared races, so within noise
    assert curves["delta"] == pytest.approx(curves["full"], abs=1e-9)
    for sync, (early, late) in curves.items():
        assert late < early, sync
        assert late <= 0.8, sync
        assert abs(late - curves["delta"][1]) < 0.25, (sync, curves)
