"""The ray backends of mccfr and selfplay pass the process backends' correctness tests,
and a run that started its own Ray leaves no Ray process behind.

Starting Ray costs 10-20 s on a busy 2-core machine, so only the first test starts a
private one (through the suite, as a cell does); the others share one module-scope
cluster, which the suites join and must leave running.
"""

import importlib.util
import sys

import psutil
import pytest

from harness.probe import Probe, SuiteError

HAS_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(not HAS_RAY, reason="ray is an optional extra: pip install -e '.[ray]'")

TINY_NET = {"blocks": 1, "channels": 8, "simulations": 8, "leaves": 4}
RAY_NAMES = ("raylet", "gcs_server", "ray::", "default_worker.py")


def ray_descendants() -> list[str]:
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            line = " ".join(proc.cmdline())
        except psutil.Error:
            continue
        if any(name in line for name in RAY_NAMES):
            found.append(line[:120])
    return found


def mccfr_run(probe: Probe, **params) -> dict:
    from suites.mccfr import SUITE

    SUITE.run(SUITE.params(**params), probe)
    return probe.finish()


def exploitability_trend(backend: str) -> tuple[list[float], dict]:
    points = []
    probe = Probe(target_work=1_500, sink=lambda r: points.append(r) if r.get("type") == "point" else None)
    params = {"game": "leduc", "workers": 2, "batch_size": 100, "exploitability_every": 500, "seed": 7}
    extra = {"start_method": "fork"} if backend == "processes" else {}
    metrics = mccfr_run(probe, backend=backend, **params, **extra)
    return [p["value"] for p in points if p["name"] == "exploitability"], metrics


@pytest.mark.slow
@needs_ray
def test_private_ray_gives_the_processes_tables_and_leaves_no_process():
    import ray

    import suites.ray_session as session

    assert not ray.is_initialized(), "another test left Ray connected"
    expected, _ = exploitability_trend("processes")
    trend, metrics = exploitability_trend("ray")
    # same seed and worker count, deterministic merge in worker order: the very same tables
    assert trend == expected
    assert len(trend) == 4 and trend[-1] < trend[0]
    assert metrics["work_requested"] == metrics["work_done"] == 1_500
    assert metrics["workers_started"] == 2 and metrics["start_method"] == "ray"
    assert metrics["sync_bytes_mean"] > 0
    # the suite started a private Ray and shut it down: none of its processes remain
    assert not ray.is_initialized()
    assert session.last_session_dir is not None
    assert session.session_processes(session.last_session_dir) == []
    assert ray_descendants() == []


@pytest.fixture(scope="module")
def cluster():
    """One Ray for the rest of the module, as a cell inside a Ray cluster would see it."""
    import ray

    from suites.ray_session import REPO_ROOT, shutdown

    ray.init(
        address="local",
        _node_ip_address="127.0.0.1",
        include_dashboard=False,
        log_to_driver=False,
        num_cpus=4,
        object_store_memory=256 * 1024**2,
        runtime_env={"env_vars": {"PYTHONPATH": REPO_ROOT}},
    )
    try:
        yield ray
    finally:
        shutdown(ray)


@pytest.mark.slow
@needs_ray
def test_mccfr_ray_does_all_requested_work(cluster):
    # 3 workers, batches of 2: one worker is never started; the last batch (the remainder)
    # runs on one actor while the other only applies the merge
    probe = Probe(target_work=5)
    metrics = mccfr_run(probe, game="kuhn", backend="ray", workers=3, batch_size=2)
    assert metrics["work_requested"] == metrics["work_done"] == metrics["iterations"] == 5
    assert metrics["workers_started"] == 2
    assert any("1 workers stay idle" in w for w in probe.warnings)
    assert cluster.is_initialized()  # a cluster the suite joined is left running


@pytest.mark.slow
@needs_ray
def test_selfplay_ray_server_finishes_valid_games(cluster):
    m = selfplay_run(Probe(target_work=3), ray_inference="server")
    assert m["games"] == m["work_requested"] == m["work_done"] == 3
    assert m["moves_per_s"] > 0  # the last counts are read before the window closes
    assert_valid_games(m)
    assert m["batch_mean"] > 0 and m["batch_max"] <= 2 * TINY_NET["leaves"]  # two actors' leaves at most
    assert m["workers_with_torch"] == 0  # game actors behind the inference actor stay torch-free
    assert m["wait_ms_count"] > 0
    assert cluster.is_initialized()  # a cluster the suite joined is left running


@pytest.mark.slow
@needs_ray
def test_selfplay_ray_local_nets_play_until_told_to_stop(cluster):
    m = selfplay_run(Probe(duration_s=1.0, warmup_s=0.2), ray_inference="local")
    assert m["moves_per_s"] > 0 and m["nn_evals_per_s"] > 0
    assert_valid_games(m)
    assert 0 < m["batch_mean"] <= TINY_NET["leaves"]  # one search step's leaves: no batching across actors
    assert cluster.is_initialized()


def selfplay_run(probe: Probe, **params) -> dict:
    from suites.selfplay import SUITE

    SUITE.run(SUITE.params(backend="ray", workers=2, **TINY_NET, **params), probe)
    return probe.finish()


def assert_valid_games(m: dict) -> None:
    games = m["games"]
    assert m["first_player_wins"] + m["second_player_wins"] + m["draws"] == games
    assert 7 * games <= m["moves"]
    assert m["nn_evals"] >= m["moves"]
    assert m["worker_devices"] == ["cpu"]


def test_shared_tables_are_refused_on_ray():
    with pytest.raises(SuiteError, match="sync=shared"):
        mccfr_run(Probe(target_work=1), game="kuhn", backend="ray", sync="shared")


@pytest.mark.parametrize("suite", ["mccfr", "selfplay"])
def test_without_ray_the_backends_say_how_to_install_it(monkeypatch, suite):
    from harness.model.registry import get_suite

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    params = {"game": "kuhn"} if suite == "mccfr" else TINY_NET
    with pytest.raises(SuiteError, match=r'backend=ray needs Ray: pip install -e "\.\[ray\]"'):
        get_suite(suite).run(get_suite(suite).params(backend="ray", **params), Probe(target_work=1))
