"""Information-set counts and the exact values every solver is checked against."""

import numpy as np
import pytest

from suites.mccfr.exploitability import nash_conv, policy_value
from suites.mccfr.games import count_infosets, flatten, kuhn, leduc, leduc_variant


def test_kuhn_and_leduc_infoset_counts():
    assert count_infosets(kuhn()) == 12
    assert count_infosets(leduc()) == 936  # OpenSpiel's leduc_poker


@pytest.mark.parametrize(
    ("ranks", "suits", "raises", "expected"),
    [
        # one raise a round: 4 decision sequences per round, 3 of them reach round two
        (3, 2, 1, 4 * 6 + 3 * 4 * 6 * 5),
        # two raises: 6 decision sequences, 5 reach round two (C cards, C * (C - 1) deals)
        (3, 2, 2, 6 * 6 + 5 * 6 * 6 * 5),
        (4, 2, 2, 6 * 8 + 5 * 6 * 8 * 7),
        (3, 3, 2, 6 * 9 + 5 * 6 * 9 * 8),
    ],
)
def test_variant_infoset_count(ranks, suits, raises, expected):
    assert count_infosets(leduc_variant(ranks, suits, raises)) == expected


def test_default_variant_is_large():
    assert count_infosets(leduc_variant(13, 4, 2)) >= 50_000


def test_uniform_policy_nash_conv():
    for spec, expected in [(kuhn(), 11 / 12), (leduc(), 4.747222)]:
        game = flatten(spec)
        uniform = np.zeros((game.num_infosets, 3))
        assert nash_conv(game, uniform) == pytest.approx(expected, abs=1e-5)


def test_uniform_policy_values_are_zero_sum():
    game = flatten(leduc())
    uniform = np.zeros((game.num_infosets, 3))
    assert policy_value(game, uniform, 0) == pytest.approx(-policy_value(game, uniform, 1), abs=1e-12)
