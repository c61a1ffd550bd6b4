import sys

import pytest

from harness.errors import UserError
from harness.running.executors import get_executor


def test_ray_executor_without_ray_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    monkeypatch.delitem(sys.modules, "harness.running.executors.ray", raising=False)
    with pytest.raises(UserError, match=r'pip install -e "\.\[ray\]"'):
        get_executor("ray")


def test_unknown_executor_lists_the_allowed_ones():
    with pytest.raises(UserError, match="local, ray"):
        get_executor("slurm")
