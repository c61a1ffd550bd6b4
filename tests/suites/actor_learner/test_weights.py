"""Weights published through shared memory arrive intact and versions never go back."""

from __future__ import annotations

import hashlib
import multiprocessing as mp

import numpy as np
import pytest

from suites.actor_learner.weights import UNPUBLISHED, WeightBoard

SIZE = 4546  # the parameter count of a hidden=64 Q network


def weights_of(version: int) -> np.ndarray:
    return np.random.default_rng(version).standard_normal(SIZE).astype(np.float32)


def digest(flat: np.ndarray) -> str:
    return hashlib.blake2b(flat.tobytes(), digest_size=16).hexdigest()


def _publisher(board: WeightBoard, agent: int, last: int) -> None:
    for version in range(1, last + 1):
        board.publish(agent, weights_of(version), version)


def test_published_weights_arrive_intact_and_versions_only_increase() -> None:
    ctx = mp.get_context("fork")
    board = WeightBoard(2, SIZE, ctx)
    assert board.versions.tolist() == [UNPUBLISHED, UNPUBLISHED]
    board.publish(1, weights_of(0), 0)
    last = 2000
    publisher = ctx.Process(target=_publisher, args=(board, 1, last), daemon=True)
    expected = {}
    out = np.empty(SIZE, np.float32)
    seen = []
    publisher.start()
    try:
        while publisher.is_alive() or not seen or seen[-1] < last:
            version = board.read(1, out)
            if version not in expected:
                expected[version] = digest(weights_of(version))
            assert digest(out) == expected[version], f"torn or stale weights at version {version}"
            seen.append(version)
    finally:
        publisher.join(30)
    assert publisher.exitcode == 0
    assert all(a <= b for a, b in zip(seen, seen[1:], strict=False)), "a version went backwards"
    assert seen[-1] == last and len(set(seen)) > 10
    assert board.versions[0] == UNPUBLISHED  # the other agent's slot was never touched


def test_publishing_an_older_version_is_refused() -> None:
    board = WeightBoard(1, SIZE, mp.get_context("fork"))
    board.publish(0, weights_of(5), 5)
    with pytest.raises(ValueError, match="version 4"):
        board.publish(0, weights_of(4), 4)
    with pytest.raises(ValueError, match="weights"):
        board.publish(0, np.zeros(3, np.float32), 6)
