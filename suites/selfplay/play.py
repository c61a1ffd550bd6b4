"""Self-play games: MCTS on both sides, temperature schedule, tallies for the suite.

A worker (thread, process, or the suite's main process) owns one row of a tally array and
is its only writer; the main process reads every row and turns the deltas into probe
counters. numpy only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from suites.selfplay.connect4 import Board
from suites.selfplay.mcts import MCTS, Evaluator, SearchConfig, choose_move

# columns of a tally row; MOVES_IN_GAMES adds each finished game's moves when it ends, so
# the mean game length (and games/s from moves/s, in a window too short for games) is known
GAMES, MOVES, NN_EVALS, FIRST_WINS, SECOND_WINS, DRAWS, MOVES_IN_GAMES = range(7)
TALLY_WIDTH = 7


@dataclass(frozen=True)
class PlayConfig:
    search: SearchConfig = field(default_factory=SearchConfig)
    temperature_moves: int = 8  # plies sampled in proportion to visits; the rest play the most visited


def play_game(
    evaluator: Evaluator,
    config: PlayConfig,
    rng: np.random.Generator,
    tally: np.ndarray,
    should_stop: Callable[[], bool] | None = None,
) -> int | None:
    """One game; returns its result (+1 first player won, -1 second, 0 draw) or None if stopped.

    Moves and evaluations are tallied as they happen, so rates stay smooth even when one
    game takes longer than the measured window; a game is tallied once it ends.
    """
    mcts = MCTS(evaluator, config.search, rng)
    board = Board()
    while not board.is_terminal:
        before = mcts.evals
        visits = mcts.search(board, add_noise=True, should_stop=should_stop)
        tally[NN_EVALS] += mcts.evals - before
        if visits is None:
            return None
        temperature = 1.0 if board.moves < config.temperature_moves else 0.0
        move = choose_move(visits, temperature, rng)
        board = board.play(move)
        mcts.advance(move)
        tally[MOVES] += 1
    result = board.result()
    assert result is not None
    tally[GAMES] += 1
    tally[MOVES_IN_GAMES] += board.moves
    tally[{1: FIRST_WINS, -1: SECOND_WINS, 0: DRAWS}[result]] += 1
    return result


def play_games(
    evaluator: Evaluator,
    config: PlayConfig,
    seed: int,
    tally: np.ndarray,
    should_stop: Callable[[], bool],
    games: int | None = None,
) -> int:
    """Play `games` games (None: until `should_stop`); returns how many finished."""
    rng = np.random.default_rng(seed)
    finished = 0
    while games is None or finished < games:
        if should_stop() or play_game(evaluator, config, rng, tally, should_stop) is None:
            break
        finished += 1
    return finished
