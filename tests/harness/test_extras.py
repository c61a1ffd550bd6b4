"""A suite whose extra is missing says which to install (exit 2) and `harness suites` shows
it as not ready; the harness itself imports none of the heavy extras' modules.
(.ci/base-install proves the base install in a clean venv without torch.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.model import registry

NEEDY = "needy=tests.toys.toy_suite:NEEDY"
HEAVY = ("torch", "numba", "gymnasium", "ray")


@pytest.fixture
def needy(monkeypatch):
    monkeypatch.setenv(registry.ENV_SUITES, NEEDY)
    registry.discover.cache_clear()
    yield
    registry.discover.cache_clear()


def test_a_suite_whose_extra_is_missing_exits_2_naming_the_extra(needy, cli, tmp_path):
    for args in (("run", "needy"), ("sweep", "--suite", "needy")):
        result = cli(*args, "--duration", "0.2", "--out", tmp_path)
        assert result.exit_code == 2, result.output
        assert "harness_test_module_that_is_not_installed" in result.output and "[needy]" in result.output
    assert list(tmp_path.iterdir()) == []  # refused before anything ran
    listed = cli("suites")
    assert listed.exit_code == 0
    assert "needy: not ready" in listed.output and "synthetic: ready" in listed.output


@pytest.mark.slow
def test_the_harness_imports_no_heavy_extra():
    """Every harness module but the Ray executor (which is the [ray] extra) imports without
    pulling in torch, numba, gymnasium or ray."""
    code = (
        "import pkgutil, importlib, sys, harness\n"
        "for m in pkgutil.walk_packages(harness.__path__, 'harness.'):\n"
        "    if m.name != 'harness.running.executors.ray':\n"
        "        importlib.import_module(m.name)\n"
        "from harness.model.registry import discover\n"
        "discover()\n"
        f"print(sorted(set({HEAVY!r}) & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_version(cli):
    from harness import __version__

    result = cli("--version")
    assert result.exit_code == 0 and result.output.strip() == f"harness {__version__}"
