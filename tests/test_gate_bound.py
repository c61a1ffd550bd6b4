"""benchmarks/gate_bound.py: the spreads it reads from a campaign's blocks are the ones the
blocks were drawn with, and its bound is the fixed test's own arithmetic."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("gate_bound", ROOT / "benchmarks" / "gate_bound.py")
gate_bound = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gate_bound)


def side(name: str, rate: float, cpu_share: float) -> dict:
    return {"side": name, "length_s": 1.0, "window_s": 1.0, "rate": rate * cpu_share, "window_cpu_s": cpu_share}


def campaign(sigma_w: float, sigma_b: float, trials: int = 40, blocks: int = 10, pairs: int = 4, seed: int = 0) -> list[dict]:
    """Blocks as the slicer records them: each launch shifts its pairs by one draw, each pair
    adds its own; a slice's wall rate is its rate per CPU second times a CPU share that varies
    (what the per-CPU-second reading takes out)."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(trials):
        shift = math.log(1 / 1.05) if t % 2 else 0.0  # planted arms count too: each trial's mean is taken out
        rows = []
        for _ in range(blocks):
            launch = rng.normal(0, sigma_b)
            measured = [
                {"warmup": False, "base": side("base", 500.0, rng.uniform(0.5, 1)),
                 "cand": side("candidate", 500.0 * math.exp(shift + launch + rng.normal(0, sigma_w)), rng.uniform(0.5, 1))}
                for _ in range(pairs)
            ]  # fmt: skip
            warmup = {"warmup": True, "base": side("base", 1.0, 1.0), "cand": side("candidate", 9.0, 1.0)}
            rows.append({"pairs": [warmup, *measured], "elapsed_s": 5.0 + 2.0 * pairs})
        out.append({"cell_name": "spin", "cell": {"ab_blocks": rows}})
    return out


@pytest.mark.parametrize(("sigma_w", "sigma_b"), [(0.08, 0.0), (0.05, 0.03)])
def test_the_pairs_and_the_launches_spreads_are_recovered(sigma_w, sigma_b):
    found = gate_bound.spreads(campaign(sigma_w, sigma_b))
    assert found["sigma_w"] == pytest.approx(sigma_w, rel=0.1)
    # a variance estimated from 360 degrees of freedom: within three of its standard errors
    se = math.sqrt(2 / 360) * (sigma_b**2 + sigma_w**2 / 4)
    assert found["sigma_b"] ** 2 == pytest.approx(sigma_b**2, abs=3 * se)
    assert found["a"] == pytest.approx(5.0) and found["b"] == pytest.approx(2.0)
    assert (found["trials"], found["blocks"]) == (40, 400)


def test_the_budget_it_names_is_the_one_where_the_fixed_test_says_ok_that_often():
    sp = {"sigma_w": 0.08, "sigma_b": 0.01, "a": 5.0, "b": 2.0}
    needed = gate_bound.budget_for(sp, 0.03, 0.05, 0.95)
    _, s = gate_bound.best_design(sp, needed)
    assert gate_bound.p_ok(s, 0.03, 0.05) == pytest.approx(0.95, abs=1e-6)
    # more noise per pair, a longer budget; no launch bias, one long block is the best design
    assert gate_bound.budget_for({**sp, "sigma_w": 0.16}, 0.03, 0.05, 0.95) > 3 * needed
    assert gate_bound.best_design({**sp, "sigma_b": 0.0}, 120)[0] == gate_bound.MAX_PAIRS
