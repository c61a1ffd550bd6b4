"""Connect Four (6 rows x 7 columns) on bitboards.

The layout is the classic one (J. Pons, "Solving Connect 4"): column c occupies bits
7c .. 7c+5, bit 7c+6 is an always-empty sentinel that stops a line from wrapping into
the next column. A position is two integers: the stones of the side to move and the
mask of all stones. Playing a column adds `bottom_of_column` to the mask, which carries
into the lowest empty cell; four in a row is two shift-and-ands per direction.

numpy only: worker processes behind the inference server import this module and must
not pay for torch.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

ROWS = 6
COLUMNS = 7
CELLS = ROWS * COLUMNS
PLANES = 3  # side to move, opponent, constant ones (lets the convolutions see the edges)

_STRIDE = ROWS + 1
_BOTTOM = tuple(1 << (c * _STRIDE) for c in range(COLUMNS))
_TOP = tuple(1 << (ROWS - 1 + c * _STRIDE) for c in range(COLUMNS))
# bit index of cell (row, column); row 0 is the bottom row
_BIT_OF_CELL = np.array([[c * _STRIDE + r for c in range(COLUMNS)] for r in range(ROWS)], dtype=np.intp)
_ONES = np.ones((ROWS, COLUMNS), dtype=np.float32)


class IllegalMove(ValueError):
    """A move into a full column, outside the board, or after the game has ended."""


def _has_four(stones: int) -> bool:
    for shift in (1, _STRIDE, _STRIDE - 1, _STRIDE + 1):  # vertical, horizontal, two diagonals
        pairs = stones & (stones >> shift)
        if pairs & (pairs >> (2 * shift)):
            return True
    return False


def _bits_to_grid(stones: int) -> np.ndarray:
    bits = np.unpackbits(np.frombuffer(stones.to_bytes(8, "little"), dtype=np.uint8), bitorder="little")
    return bits[_BIT_OF_CELL].astype(np.float32)


class Board:
    """An immutable Connect Four position; `play` returns a new one."""

    __slots__ = ("current", "mask", "moves", "last_mover_won")

    def __init__(self, current: int = 0, mask: int = 0, moves: int = 0, last_mover_won: bool = False):
        self.current = current  # stones of the side to move
        self.mask = mask  # all stones
        self.moves = moves
        self.last_mover_won = last_mover_won

    @classmethod
    def from_moves(cls, moves: Iterable[int] | str) -> Board:
        """Columns played from the empty board; a string of digits 0-6 is accepted too."""
        board = cls()
        for column in moves:
            board = board.play(int(column))
        return board

    @property
    def is_terminal(self) -> bool:
        return self.last_mover_won or self.moves == CELLS

    @property
    def to_move(self) -> int:
        """0 for the first player, 1 for the second."""
        return self.moves & 1

    def can_play(self, column: int) -> bool:
        return 0 <= column < COLUMNS and not self.is_terminal and not self.mask & _TOP[column]

    def legal_moves(self) -> list[int]:
        if self.is_terminal:
            return []
        return [c for c in range(COLUMNS) if not self.mask & _TOP[c]]

    def play(self, column: int) -> Board:
        if not self.can_play(column):
            if self.is_terminal:
                raise IllegalMove(f"column {column}: the game is over")
            if not 0 <= column < COLUMNS:
                raise IllegalMove(f"column {column}: columns are 0..{COLUMNS - 1}")
            raise IllegalMove(f"column {column} is full")
        mask = self.mask | (self.mask + _BOTTOM[column])
        opponent = self.current ^ self.mask  # becomes the side to move
        mover = opponent ^ mask
        return Board(opponent, mask, self.moves + 1, _has_four(mover))

    def result(self) -> int | None:
        """None while playing; +1 first player won, -1 second player won, 0 draw."""
        if self.last_mover_won:
            return 1 if (self.moves - 1) % 2 == 0 else -1
        if self.moves == CELLS:
            return 0
        return None

    def terminal_value(self) -> float:
        """Value of a terminal position for the side to move: it lost, or it is a draw."""
        return -1.0 if self.last_mover_won else 0.0

    def planes(self) -> np.ndarray:
        """Input planes (PLANES, ROWS, COLUMNS) float32, from the side to move's view."""
        return np.stack((_bits_to_grid(self.current), _bits_to_grid(self.current ^ self.mask), _ONES), axis=0)

    def __str__(self) -> str:
        first = self.current if self.to_move == 0 else self.current ^ self.mask
        rows = []
        for r in reversed(range(ROWS)):
            cells = []
            for c in range(COLUMNS):
                bit = 1 << (c * _STRIDE + r)
                cells.append("." if not self.mask & bit else ("X" if first & bit else "O"))
            rows.append(" ".join(cells))
        return "\n".join(rows)

    def __repr__(self) -> str:
        return f"Board(moves={self.moves}, terminal={self.is_terminal})\n{self}"


def encode(boards: list[Board]) -> np.ndarray:
    """Planes of several positions, (len(boards), PLANES, ROWS, COLUMNS) float32."""
    out = np.empty((len(boards), PLANES, ROWS, COLUMNS), dtype=np.float32)
    for i, board in enumerate(boards):
        out[i] = board.planes()
    return out
