"""Connect Four rules on bitboards, checked against explicit positions and a naive grid."""

import numpy as np
import pytest

from suites.selfplay.connect4 import CELLS, COLUMNS, PLANES, ROWS, Board, IllegalMove, encode

# a full board without four in a row (found by random play, checked by the naive test below)
DRAW = "335212005014602435524223014410466566335611"


def naive_winner(moves: str) -> int | None:
    """Replays on a plain grid, looking for four through each new stone: the reference the
    bitboard must match."""
    grid = [[None] * COLUMNS for _ in range(ROWS)]
    heights = [0] * COLUMNS
    for ply, ch in enumerate(moves):
        c, player = int(ch), ply % 2
        r = heights[c]
        grid[r][c] = player
        heights[c] += 1
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            run = 1
            for sign in (1, -1):
                rr, cc = r + sign * dr, c + sign * dc
                while 0 <= rr < ROWS and 0 <= cc < COLUMNS and grid[rr][cc] == player:
                    run, rr, cc = run + 1, rr + sign * dr, cc + sign * dc
            if run >= 4:
                return 1 if player == 0 else -1
    return 0 if len(moves) == CELLS else None


@pytest.mark.parametrize(
    ("moves", "direction"),
    [
        ("0101010", "vertical"),
        ("0011223", "horizontal"),
        ("01122323353", "diagonal /"),
        ("65544343313", "diagonal \\"),
    ],
)
def test_first_player_wins_in_every_direction(moves, direction):
    before = Board.from_moves(moves[:-1])
    assert not before.is_terminal and before.result() is None
    board = before.play(int(moves[-1]))
    assert board.is_terminal, direction
    assert board.result() == 1 == naive_winner(moves)
    assert board.terminal_value() == -1.0  # the side to move has lost
    assert board.legal_moves() == []


def test_second_player_win():
    board = Board.from_moves("60101010")
    assert board.result() == -1 == naive_winner("60101010")


def test_draw_on_a_full_board():
    board = Board.from_moves(DRAW)
    assert naive_winner(DRAW) == 0
    assert board.is_terminal and board.result() == 0 and board.terminal_value() == 0.0
    assert board.moves == CELLS


def test_no_wrap_across_columns():
    # first player at column 0 rows 3-5 and column 1 row 0: four consecutive bits if the
    # layout had no sentinel row between columns
    moves = "10202003040"
    board = Board.from_moves(moves)
    assert board.result() is None and naive_winner(moves) is None


def test_illegal_moves_are_rejected():
    board = Board.from_moves("000000")
    assert 0 not in board.legal_moves()
    with pytest.raises(IllegalMove, match="full"):
        board.play(0)
    for column in (-1, COLUMNS):
        with pytest.raises(IllegalMove, match="columns are"):
            board.play(column)
    won = Board.from_moves("0101010")
    with pytest.raises(IllegalMove, match="over"):
        won.play(3)


def test_random_games_agree_with_the_naive_grid():
    rng = np.random.default_rng(0)
    for _ in range(40):
        board, moves = Board(), ""
        while not board.is_terminal:
            column = int(rng.choice(board.legal_moves()))
            board, moves = board.play(column), moves + str(column)
            assert board.result() == naive_winner(moves)


def test_planes_are_from_the_side_to_move():
    board = Board.from_moves("3")  # first player in column 3; second player to move
    planes = board.planes()
    assert planes.shape == (PLANES, ROWS, COLUMNS) and planes.dtype == np.float32
    assert planes[0].sum() == 0  # side to move has no stones
    assert planes[1][0, 3] == 1 and planes[1].sum() == 1  # opponent's stone, bottom row
    assert np.all(planes[2] == 1)
    after = board.play(3)
    assert after.planes()[0][0, 3] == 1 and after.planes()[1][1, 3] == 1
    assert encode([board, after]).shape == (2, PLANES, ROWS, COLUMNS)
