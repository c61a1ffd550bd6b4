"""PUCT search with a uniform-prior evaluator: it must find wins and blocks from terminals alone."""

import numpy as np
import pytest

from suites.selfplay.connect4 import COLUMNS, Board
from suites.selfplay.mcts import MCTS, SearchConfig, choose_move
from suites.selfplay.play import GAMES, MOVES, NN_EVALS, TALLY_WIDTH, PlayConfig, play_game


class UniformEvaluator:
    """Uniform priors and value 0: search driven by terminal positions alone."""

    def evaluate(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = planes.shape[0]
        return np.full((n, COLUMNS), 1.0 / COLUMNS, dtype=np.float32), np.zeros(n, dtype=np.float32)


def best_move(moves: str, leaves: int, simulations: int = 256) -> int:
    config = SearchConfig(simulations=simulations, leaves=leaves, dirichlet_eps=0.0)
    visits = MCTS(UniformEvaluator(), config, np.random.default_rng(0)).search(Board.from_moves(moves))
    assert visits is not None and visits.sum() == simulations
    return choose_move(visits, 0.0, np.random.default_rng(0))


@pytest.mark.parametrize("leaves", [1, 8])
@pytest.mark.parametrize(
    ("moves", "win"),
    [("010102", 0), ("001122", 3), ("0112232335", 3)],  # vertical, horizontal, diagonal
)
def test_plays_the_immediate_win(moves, win, leaves):
    assert Board.from_moves(moves).play(win).last_mover_won
    assert best_move(moves, leaves) == win


@pytest.mark.parametrize("leaves", [1, 8])
@pytest.mark.parametrize(
    ("moves", "block"),
    [("01010", 0), ("06162", 3), ("4245336554", 5)],  # vertical, horizontal, diagonal threats
)
def test_blocks_the_immediate_loss(moves, block, leaves):
    board = Board.from_moves(moves)
    assert not any(board.play(c).last_mover_won for c in board.legal_moves())  # no win of our own
    threat = Board(board.current ^ board.mask, board.mask, board.moves + 1).play(block)
    assert threat.last_mover_won  # the opponent would win there
    assert best_move(moves, leaves) == block


def test_virtual_loss_is_fully_reverted():
    config = SearchConfig(simulations=64, leaves=8, dirichlet_eps=0.25)
    mcts = MCTS(UniformEvaluator(), config, np.random.default_rng(1))
    mcts.search(Board.from_moves("33"))
    root = mcts.root
    assert root is not None and root.total == sum(root.visits) == 64
    stack = [root]
    while stack:
        node = stack.pop()
        assert node.total == sum(node.visits)
        for a in node.legal:
            assert node.visits[a] == int(node.visits[a])  # no virtual visit left behind
            assert abs(node.value_sum[a]) <= node.visits[a]
            child = node.children[a]
            if child is not None:
                # the child's first visit expanded it (a leaf picked twice in one step counts twice)
                assert child.total <= node.visits[a] - 1
                stack.append(child)
    assert mcts.evals <= 1 + 64


def test_a_game_tallies_moves_evals_and_its_result():
    tally = np.zeros(TALLY_WIDTH, dtype=np.int64)
    config = PlayConfig(SearchConfig(simulations=16, leaves=4))
    result = play_game(UniformEvaluator(), config, np.random.default_rng(2), tally)
    assert result in (-1, 0, 1)
    assert tally[GAMES] == 1 and 7 <= tally[MOVES] <= 42
    assert tally[MOVES] <= tally[NN_EVALS] <= tally[MOVES] * 17
