"""PUCT Monte Carlo tree search with batched leaf evaluation (virtual loss).

The search is AlphaZero's (Silver et al., "A general reinforcement learning algorithm that
masters chess, shogi and Go through self-play", Science 2018): select by
Q + c_puct * P * sqrt(N_parent) / (1 + N), expand a leaf with the network's priors, back
its value up with alternating signs, add Dirichlet noise to the root's priors.

With `leaves` > 1 one search step selects up to that many leaves before evaluating them
as ONE batch. Each selected path carries a virtual loss (its edges count as visited and
lost until the real value arrives), which steers the next selection elsewhere; a leaf
picked twice in the same step is evaluated once and backed up along both paths. This is
what lets a single game fill a batch (Chaslot et al. 2008, "Parallel Monte-Carlo Tree
Search"; Segal 2010 on virtual loss).

An evaluator is anything with `evaluate(planes) -> (priors, values)`, planes of shape
(n, PLANES, 6, 7) float32, priors (n, 7) over all columns, values (n,) in [-1, 1] for the
side to move. numpy only (server workers import this).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from suites.selfplay.connect4 import COLUMNS, Board, encode


class Evaluator(Protocol):
    def evaluate(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


@dataclass(frozen=True)
class SearchConfig:
    simulations: int = 64
    leaves: int = 8
    c_puct: float = 1.5
    dirichlet_alpha: float = 1.0  # ~10 / typical number of legal moves, as AlphaZero scales it
    dirichlet_eps: float = 0.25  # 0 turns root noise off
    virtual_loss: float = 1.0


class Node:
    __slots__ = ("board", "legal", "prior", "visits", "value_sum", "total", "children", "expanded")

    def __init__(self, board: Board):
        self.board = board
        self.legal = board.legal_moves()
        self.prior = [0.0] * COLUMNS
        self.visits = [0.0] * COLUMNS  # per edge, virtual visits included while pending
        self.value_sum = [0.0] * COLUMNS  # per edge, from this node's side to move
        self.total = 0.0
        self.children: list[Node | None] = [None] * COLUMNS
        self.expanded = False

    def expand(self, priors: np.ndarray) -> None:
        legal = self.legal
        p = [float(priors[a]) for a in legal]
        s = sum(p)
        if s > 0 and math.isfinite(s):
            for a, pa in zip(legal, p, strict=True):
                self.prior[a] = pa / s
        else:  # a degenerate network output: fall back to uniform over legal moves
            for a in legal:
                self.prior[a] = 1.0 / len(legal)
        self.expanded = True

    def select(self, c_puct: float) -> int:
        scale = c_puct * math.sqrt(self.total + 1.0)
        best, best_score = -1, -math.inf
        visits, value_sum, prior = self.visits, self.value_sum, self.prior
        for a in self.legal:
            n = visits[a]
            score = (value_sum[a] / n if n > 0 else 0.0) + scale * prior[a] / (1.0 + n)
            if score > best_score:
                best, best_score = a, score
        return best

    def child(self, action: int) -> Node:
        node = self.children[action]
        if node is None:
            node = self.children[action] = Node(self.board.play(action))
        return node


Path = list[tuple[Node, int]]
Reply = tuple[np.ndarray, np.ndarray]  # (priors, values) of a batch of planes


class MCTS:
    """A search tree that follows the game: `search` from the current position, `advance`
    with the move played (the chosen child's subtree is kept, as AlphaZero does).
    `evals` counts positions sent to the evaluator."""

    def __init__(self, evaluator: Evaluator, config: SearchConfig, rng: np.random.Generator):
        self.evaluator = evaluator
        self.config = config
        self.rng = rng
        self.evals = 0
        self.root: Node | None = None

    def search(
        self, board: Board, add_noise: bool = True, should_stop: Callable[[], bool] | None = None
    ) -> np.ndarray | None:
        """Visit counts of the root's moves after `simulations` more simulations (None if stopped)."""
        steps = self.steps(board, add_noise)
        try:
            planes = next(steps)
            while True:
                if should_stop is not None and should_stop():
                    return None
                planes = steps.send(self.evaluator.evaluate(planes))
        except StopIteration as done:
            return done.value

    def steps(self, board: Board, add_noise: bool = True) -> Generator[np.ndarray, Reply, np.ndarray]:
        """The search as a generator: it yields each batch of leaf planes it needs evaluated,
        takes the evaluator's (priors, values) back through `send`, and returns the root's
        visit counts. A worker that keeps several games in flight advances another game's
        search while this one's leaves wait for the inference server."""
        if board.is_terminal:
            raise ValueError("search from a terminal position")
        cfg = self.config
        root = self.root
        if root is None or (root.board.current, root.board.mask) != (board.current, board.mask):
            root = self.root = Node(board)
        if not root.expanded:
            entries = [(root, [[]])]
            self._expand(entries, (yield encode([root.board])))
        if add_noise and cfg.dirichlet_eps > 0:
            noise = self.rng.dirichlet([cfg.dirichlet_alpha] * len(root.legal))
            for a, eta in zip(root.legal, noise, strict=True):
                root.prior[a] = (1 - cfg.dirichlet_eps) * root.prior[a] + cfg.dirichlet_eps * float(eta)
        done = 0
        while done < cfg.simulations:
            step = min(cfg.leaves, cfg.simulations - done)
            pending: dict[int, tuple[Node, list[Path]]] = {}
            for _ in range(step):
                leaf, path = self._select(root)
                if leaf.board.is_terminal:
                    self._backup(path, leaf.board.terminal_value())
                else:
                    entry = pending.get(id(leaf))
                    if entry is None:
                        pending[id(leaf)] = (leaf, [path])
                    else:
                        entry[1].append(path)
            if pending:
                entries = list(pending.values())
                self._expand(entries, (yield encode([leaf.board for leaf, _ in entries])))
            done += step
        return np.array(root.visits, dtype=np.float64)

    def advance(self, action: int) -> None:
        """The move `action` was played from the root: keep its subtree for the next search."""
        self.root = self.root.children[action] if self.root is not None else None

    def _select(self, root: Node) -> tuple[Node, Path]:
        vl = self.config.virtual_loss
        c_puct = self.config.c_puct
        node, path = root, []
        while node.expanded and not node.board.is_terminal:
            a = node.select(c_puct)
            node.visits[a] += vl
            node.value_sum[a] -= vl
            node.total += vl
            path.append((node, a))
            node = node.child(a)
        return node, path

    def _backup(self, path: Path, value: float) -> None:
        """`value` is for the side to move at the path's leaf; each edge stores its mover's view."""
        vl = self.config.virtual_loss
        for node, a in reversed(path):
            value = -value
            node.visits[a] += 1.0 - vl
            node.value_sum[a] += value + vl
            node.total += 1.0 - vl

    def _expand(self, entries: list[tuple[Node, list[Path]]], reply: Reply) -> None:
        priors, values = reply
        self.evals += len(entries)
        for i, (leaf, paths) in enumerate(entries):
            leaf.expand(priors[i])
            for path in paths:
                self._backup(path, float(values[i]))


def choose_move(visits: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """Sample in proportion to visits^(1/T); T == 0 plays the most visited move."""
    if temperature <= 0:
        best = np.flatnonzero(visits == visits.max())
        return int(best[0]) if best.size == 1 else int(rng.choice(best))
    weights = visits ** (1.0 / temperature)
    return int(rng.choice(COLUMNS, p=weights / weights.sum()))
