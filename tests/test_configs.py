"""Every committed sweep spec expands into valid cells (so a renamed knob breaks a test, not a user)."""

from pathlib import Path

import pytest

from harness.model.registry import discover
from harness.running.matrix import expand, load_spec

CONFIGS = sorted((Path(__file__).resolve().parent.parent / "configs").glob("*.toml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_spec_expands(path):
    cells = expand(load_spec(path))
    assert cells and len({c.id for c in cells}) == len(cells)


def test_quick_sweep_shows_every_installed_suite():
    suites = {c.suite for c in expand(load_spec(CONFIGS[0].parent / "quick.toml"))}
    installed, broken = discover()
    assert not broken
    # `command` runs the user's own program: it has no workload of its own to show
    assert suites == set(installed) - {"command"}
