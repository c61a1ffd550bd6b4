"""A backend registered from outside its suite (tests/toys/toy_backend.py) is a backend like
the suite's own: its name validates, `harness suites` lists it, and a sweep's cells, each
in a fresh interpreter, find it through HARNESS_PLUGINS and run it."""

import pytest
from pydantic import ValidationError

import harness.model.registry as registry
from tests.conftest import read_records, run_dirs


@pytest.fixture
def fresh_registry():
    """Suites found again after the test changed the environment, and again after it."""

    def clear() -> None:
        registry.discover.cache_clear()
        registry.vocabulary_of.cache_clear()
        registry.suite_defaults.cache_clear()

    clear()
    yield
    clear()


def test_a_plugin_backend_validates_and_is_listed(cli, fresh_registry):
    import tests.toys.toy_backend  # noqa: F401  # registers "toy" with mccfr's BACKENDS
    from suites.mccfr import Params
    from suites.mccfr.backends import BACKENDS

    assert Params(backend="toy").backend == "toy"
    assert "toy" in Params.model_json_schema()["properties"]["backend"]["enum"]
    assert BACKENDS.get("toy").__name__ == "ToyBackend"
    with pytest.raises(ValidationError, match="allowed: .*toy"):
        Params(backend="toys")
    result = cli("suites")
    assert result.exit_code == 0, result.output
    assert "toy" in result.output


@pytest.mark.slow
def test_a_sweep_runs_the_plugin_backend_in_every_cell(cli, tmp_path, monkeypatch, fresh_registry):
    monkeypatch.setenv("HARNESS_PLUGINS", "tests.toys.toy_backend")  # the cells inherit it
    result = cli(
        "sweep", "--suite", "mccfr", "--set", "backend=toy", "--set", "game=kuhn", "--workers", "1,2",
        "--duration", "0.5", "--warmup", "0", "--out", tmp_path, "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (run_dir,) = run_dirs(tmp_path)
    records = read_records(run_dir)
    assert sorted(r["params"]["workers"] for r in records) == [1, 2]
    for record in records:
        assert record["status"] == "ok", record.get("reason")
        assert record["params"]["backend"] == "toy"
        assert record["metrics"]["start_method"] == "toy"  # the toy ran, not the sequential backend
        assert record["metrics"]["iterations_per_s"] > 0  # the suite's headline rate
