"""Run directories written with RunStore from made-up numbers: the gate, history and export
tests need exact control over values, and no cell has to run."""

from __future__ import annotations

import numpy as np

from harness.runs.store import RunStore
from tests.records import make_record

SPIN = {"kind": "spin", "workers": 1, "unit_size": 20000, "slowdown": 1.0, "fail": "none"}


def record(cid, params, repeat, metrics, status="ok", suite="synthetic", work=None):
    return make_record(cid, metrics, params, suite=suite, repeat=repeat, status=status, work=work, duration=1.0)


def make_run(root, cells, repeats=5, speed=1.0, noise=0.01, seed=0, extra=(), meta=None):
    """cells: {id: (params, units_per_s)}. `speed` scales every rate (a slower machine);
    `meta` adds to (or replaces) run.json's facts (hostname, cpu_model, started ...)."""
    rng = np.random.default_rng(seed)
    facts = {"git_commit": f"c{seed}", "started": f"2026-11-22T08:0{seed % 10}:00Z", **(meta or {})}
    store = RunStore.create(root, "t", facts)
    for r in range(repeats):
        load = speed * (1 + rng.normal(0, noise))  # shared by the cells of one repeat
        for cid, (params, rate) in cells.items():
            store.append(record(cid, params, r, {"units_per_s": rate * load * (1 + rng.normal(0, noise))}))
    for rec in extra:
        store.append(rec)
    return store.root


def cells(target_slowdown=1.0):
    return {
        "ref": (SPIN, 200.0),
        "tgt": ({**SPIN, "unit_size": 30000}, 130.0 / target_slowdown),
    }
