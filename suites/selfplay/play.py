"""Self-play games: MCTS on both sides, temperature schedule, tallies for the suite.

A worker (thread, process, or the suite's main process) owns one row of a tally array and
is its only writer; the main process reads every row and turns the deltas into probe
counters. numpy only.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from suites.selfplay.connect4 import Board
from suites.selfplay.mcts import MCTS, Evaluator, Reply, SearchConfig, choose_move

# columns of a tally row; MOVES_IN_GAMES adds each finished game's moves when it ends, so
# the mean game length (and games/s from moves/s, in a window too short for games) is known
GAMES, MOVES, NN_EVALS, FIRST_WINS, SECOND_WINS, DRAWS, MOVES_IN_GAMES = range(7)
TALLY_WIDTH = 7
_NO_EVALUATOR: Evaluator = None  # type: ignore[assignment]  # game_steps' searches yield their leaves instead


@dataclass(frozen=True)
class PlayConfig:
    search: SearchConfig = field(default_factory=SearchConfig)
    temperature_moves: int = 8  # plies sampled in proportion to visits; the rest play the most visited


def game_steps(config: PlayConfig, rng: np.random.Generator, tally: np.ndarray) -> Generator[np.ndarray, Reply, int]:
    """One game as a generator: yields each batch of leaf planes its searches need, takes
    (priors, values) back through `send`, returns the result (+1 first player won, -1
    second, 0 draw). Moves and evaluations are tallied as they happen, so rates stay smooth
    even when one game takes longer than the measured window; a game is tallied once it ends."""
    mcts = MCTS(_NO_EVALUATOR, config.search, rng)
    board = Board()
    while not board.is_terminal:
        before = mcts.evals
        visits = yield from mcts.steps(board, add_noise=True)
        tally[NN_EVALS] += mcts.evals - before
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


def play_game(
    evaluator: Evaluator,
    config: PlayConfig,
    rng: np.random.Generator,
    tally: np.ndarray,
    should_stop: Callable[[], bool] | None = None,
) -> int | None:
    """One game evaluated in turn by `evaluator`; its result, or None if stopped."""
    steps = game_steps(config, rng, tally)
    try:
        planes = next(steps)
        while True:
            if should_stop is not None and should_stop():
                return None
            planes = steps.send(evaluator.evaluate(planes))
    except StopIteration as end:
        return end.value


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


class AsyncEvaluator(Protocol):
    """One in-flight request at a time: `submit` sends planes, `collect` waits for their
    (priors, values); `close` says no more requests come (channel.InferenceServerClient)."""

    def submit(self, planes: np.ndarray) -> None: ...
    def collect(self) -> Reply: ...
    def close(self) -> None: ...


def play_games_in_flight(
    lanes: Sequence[AsyncEvaluator],
    config: PlayConfig,
    seed: int,
    tally: np.ndarray,
    should_stop: Callable[[], bool],
    games: int | None = None,
) -> int:
    """Play with one game in flight per lane, round robin: collect a lane's reply, advance
    its game to its next leaf batch (or start a new game) and submit it, then the next lane.
    While one lane waits in the server's queue the worker advances the others, so its
    search overlaps the server's forward passes (KataGo and AlphaZero.jl run many searches
    per thread for the same reason). Starts at most `games` games (None: until
    `should_stop`); a lane with no game left is closed. Returns the games finished."""
    rng = np.random.default_rng(seed)
    started = finished = 0
    flights: list[Generator[np.ndarray, Reply, int] | None] = []

    def launch(lane: AsyncEvaluator) -> Generator[np.ndarray, Reply, int] | None:
        nonlocal started
        if games is not None and started >= games:
            lane.close()
            return None
        started += 1
        game = game_steps(config, rng, tally)
        lane.submit(next(game))  # a new game always asks for its root first
        return game

    for lane in lanes:
        if should_stop():
            return finished
        flights.append(launch(lane))
    while any(flight is not None for flight in flights):
        for i, lane in enumerate(lanes):
            game = flights[i]
            if game is None:
                continue
            reply = lane.collect()
            if should_stop():
                return finished
            try:
                lane.submit(game.send(reply))
            except StopIteration:
                finished += 1
                flights[i] = launch(lane)
    return finished
