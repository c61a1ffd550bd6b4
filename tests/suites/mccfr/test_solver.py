"""The solver reaches the known game-theoretic values, deterministically per seed."""

from collections import deque

import numpy as np
import pytest

from harness.probe import Probe
from suites.mccfr import Params, run
from suites.mccfr.backends import BACKENDS
from suites.mccfr.driver import plan
from suites.mccfr.exploitability import exploitability, nash_conv, policy_value
from suites.mccfr.games import flatten, kuhn, leduc


def solve(
    spec,
    iterations,
    backend="sequential",
    workers=1,
    sync="delta",
    seed=0,
    batch_size=100,
    snapshots=(),
    staleness=0,
):
    """Average strategy after `iterations`; with `snapshots`, also the global tables once
    each of those counts has been merged (the driver's loop, staleness batches in flight).

    Processes are forked explicitly: with torch loaded by other tests, `auto` would spawn.
    """
    game = flatten(spec)
    b = BACKENDS[backend](game, workers, sync, seed, "fork")
    taken = []
    in_flight = deque()
    done = 0

    def collect():
        nonlocal done
        b.collect()
        done += in_flight.popleft()
        if done in snapshots:
            taken.append(np.array(b.avg, copy=True))

    try:
        b.start()
        for batch, shares in enumerate(plan(iterations, batch_size, workers)):
            if len(in_flight) > staleness:
                collect()
            b.submit(shares, batch)
            in_flight.append(sum(shares))
        while in_flight:
            collect()
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


@pytest.mark.parametrize("staleness", [0, 1])
def test_deterministic_per_seed_and_worker_count(staleness):
    _, a = solve(leduc(), 2_000, backend="threads", workers=2, seed=3, staleness=staleness)
    _, b = solve(leduc(), 2_000, backend="threads", workers=2, seed=3, staleness=staleness)
    _, c = solve(leduc(), 2_000, backend="threads", workers=2, seed=4, staleness=staleness)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_staleness_changes_what_workers_see():
    _, barrier = solve(leduc(), 2_000, backend="threads", workers=2, seed=3, staleness=0)
    _, overlapped = solve(leduc(), 2_000, backend="threads", workers=2, seed=3, staleness=1)
    assert not np.array_equal(barrier, overlapped)


@pytest.mark.parametrize("staleness", [0, 1])
def test_one_worker_is_the_sequential_run(staleness):
    # one worker's update is its own change: applying it changes nothing (up to rounding)
    _, seq = solve(leduc(), 1_000, seed=5)
    _, thr = solve(leduc(), 1_000, backend="threads", workers=1, seed=5, staleness=staleness)
    np.testing.assert_allclose(seq, thr, rtol=0, atol=1e-9)


@pytest.mark.parametrize(("sync", "staleness"), [("delta", 0), ("delta", 1), ("delta", 2), ("full", 1)])
def test_processes_and_threads_run_the_same_algorithm(sync, staleness):
    _, thr = solve(leduc(), 2_000, backend="threads", workers=2, sync=sync, seed=7, staleness=staleness)
    _, proc = solve(leduc(), 2_000, backend="processes", workers=2, sync=sync, seed=7, staleness=staleness)
    np.testing.assert_array_equal(thr, proc)


@pytest.mark.parametrize("sync", ["delta", "full"])
def test_workers_hold_the_global_tables_after_the_last_update(sync):
    """The additive protocol loses nothing: once the last merged update is applied, every
    worker's tables are the main process's global tables (up to rounding)."""
    b = BACKENDS["threads"](flatten(leduc()), 3, sync, 0, "fork")
    try:
        b.start()
        for batch, shares in enumerate(plan(1_000, 90, 3)):
            b.submit(shares, batch)
            b.collect()
        last = b.flight.outgoing()
        assert len(last) == 1
        for state in b.states:
            state.apply(last)
            np.testing.assert_allclose(state.regret, b.regret, rtol=0, atol=1e-9)
            np.testing.assert_allclose(state.avg, b.avg, rtol=0, atol=1e-9)
            assert state.own == {}
        assert np.abs(b.avg).sum() > 0
    finally:
        b.close()


def test_delta_full_shared_follow_the_same_trend():
    game = flatten(leduc())
    curves = {}
    for sync in ("delta", "full", "shared"):
        _, _, taken = solve(leduc(), 10_000, "processes", 2, sync, seed=11, snapshots=(1_000, 10_000), staleness=1)
        curves[sync] = [nash_conv(game, avg) for avg in taken]
    # delta and full are one computation (different payloads); shared races, so within noise
    assert curves["delta"] == pytest.approx(curves["full"], abs=1e-9)
    for sync, (early, late) in curves.items():
        assert late < early, sync
        assert late <= 0.8, sync
        assert abs(late - curves["delta"][1]) < 0.25, (sync, curves)


def test_updates_merged_back_to_back_all_reach_the_workers():
    """Two collects with no submit between them queue two updates; the next submit sends
    both, so the workers still end with the global tables."""
    b = BACKENDS["threads"](flatten(leduc()), 2, "delta", 0, "fork")
    try:
        b.start()
        b.submit([50, 50], 0)
        b.submit([50, 50], 1)
        b.collect()
        b.collect()
        assert len(b.flight.pending) == 2
        b.submit([50, 50], 2)
        b.collect()
        last = b.flight.outgoing()
        for state in b.states:
            state.apply(last)
            np.testing.assert_allclose(state.regret, b.regret, rtol=0, atol=1e-9)
            assert state.own == {}
    finally:
        b.close()
