"""The solver reaches the known game-theoretic values, deterministically per seed."""

import numpy as np
import pytest

from harness.probe import Probe
from suites.mccfr import Params, run
from suites.mccfr.backends import BACKENDS
from suites.mccfr.driver import plan
from suites.mccfr.exploitability import exploitability, nash_conv, policy_value
from suites.mccfr.games import flatten, kuhn, leduc


def solve(spec, iterations, backend="sequential", workers=1, sync="delta", seed=0, batch_size=100, snapshots=()):
    """Average strategy after `iterations`; with `snapshots`, also after each of those counts.

    Processes are forked explicitly: with torch loaded by other tests, `auto` would spawn.
    """
    game = flatten(spec)
    b = BACKENDS[backend](game, workers, sync, seed, "fork")
    taken = []
    try:
        b.start()
        done = 0
        for batch, shares in enumerate(plan(iterations, batch_size, workers)):
            b.run_batch(shares, batch)
            done += sum(shares)
            if done in snapshots:
                taken.append(np.array(b.avg, copy=True))
        avg = np.array(b.avg, copy=True)
        return (game, avg, taken) if snapshots else (game, avg)
    finally:
        b.close()


def test_kuhn_reaches_the_game_value():
    game, avg = solve(kuhn(), 100_000, seed=1)
    assert policy_value(game, avg, 0) == pytest.approx(-1 / 18, abs=0.005)
    assert exploitability(game, avg) < 0.01


def test_leduc_nash_conv_after_10k_iterations():
    probe = Probe(target_work=10_000)
    run(Params(game="leduc", seed=0), probe)
    metrics = probe.finish()
    assert metrics["iterations"] == 10_000
    assert metrics["nash_conv"] <= 0.8
    assert metrics["exploitability"] == pytest.approx(metrics["nash_conv"] / 2)
    assert metrics["infosets"] == 936


def test_deterministic_per_seed_and_worker_count():
    _, a = solve(leduc(), 2_000, backend="threads", workers=2, seed=3)
    _, b = solve(leduc(), 2_000, backend="threads", workers=2, seed=3)
    _, c = solve(leduc(), 2_000, backend="threads", workers=2, seed=4)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_one_worker_is_the_sequential_run():
    _, seq = solve(leduc(), 1_000, seed=5)
    _, thr = solve(leduc(), 1_000, backend="threads", workers=1, seed=5)
    np.testing.assert_allclose(seq, thr, rtol=0, atol=1e-9)


def test_processes_and_threads_run_the_same_algorithm():
    _, thr = solve(leduc(), 2_000, backend="threads", workers=2, seed=7)
    _, proc = solve(leduc(), 2_000, backend="processes", workers=2, seed=7)
    np.testing.assert_allclose(thr, proc, rtol=0, atol=1e-9)


def test_delta_full_shared_follow_the_same_trend():
    game = flatten(leduc())
    curves = {}
    for sync in ("delta", "full", "shared"):
        _, _, taken = solve(leduc(), 10_000, "processes", 2, sync, seed=11, snapshots=(1_000, 10_000))
        curves[sync] = [nash_conv(game, avg) for avg in taken]
    # delta and full are one computation (different payloads); shared races, so within noise
    assert curves["delta"] == pytest.approx(curves["full"], abs=1e-9)
    for sync, (early, late) in curves.items():
        assert late < early, sync
        assert late <= 0.8, sync
        assert abs(late - curves["delta"][1]) < 0.25, (sync, curves)
