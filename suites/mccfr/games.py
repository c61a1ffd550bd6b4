"""Kuhn, Leduc and a scalable Leduc, flattened once into numpy arrays.

All three are one family: two players ante, each holds one private card from a deck of
`ranks * suits` cards (card `c` has rank `c // suits`, as in OpenSpiel), and bet in one
or two rounds with a fixed raise size per round and at most `max_raises` raises a round;
a fold is allowed only when facing a bet. Two-round games deal one public card between
the rounds; at showdown a private card that pairs the public card wins, otherwise the
higher private rank wins, equal ranks split the pot (OpenSpiel's `leduc_poker` ranking).
Kuhn is the one-round member with three single-suit cards and one raise of 1.

Only the betting tree is flattened: it is the same for every deal, so an information set
is (betting node, own card[, public card]) and gets a dense index by arithmetic:
`base[node] + card` in round one, `base[node] + card * (C - 1) + public'` in round two
(`public'` skips the own card). Every slot is a reachable information set, so the
solver's tables are plain `(infosets, 3)` arrays and the deck size only scales them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# node kinds
DECISION, FOLD, SHOWDOWN, CHANCE = 0, 1, 2, 3
# columns of FlatGame.nodes
KIND, PLAYER, ROUND, FIRST, NACT, BASE, C0, C1, WINNER = range(9)
NUM_COLUMNS = 9
MAX_ACTIONS = 3  # fold, call/check, raise


@dataclass(frozen=True)
class GameSpec:
    """Rules of one game of the family (see the module docstring)."""

    name: str
    ranks: int
    suits: int
    rounds: int
    max_raises: int
    raise_sizes: tuple[int, ...]
    ante: int = 1

    @property
    def cards(self) -> int:
        return self.ranks * self.suits


def kuhn() -> GameSpec:
    return GameSpec("kuhn", ranks=3, suits=1, rounds=1, max_raises=1, raise_sizes=(1,))


def leduc() -> GameSpec:
    """OpenSpiel's `leduc_poker` (two players, no suit isomorphism): 936 information sets."""
    return GameSpec("leduc", ranks=3, suits=2, rounds=2, max_raises=2, raise_sizes=(2, 4))


def leduc_variant(ranks: int, suits: int, raises: int) -> GameSpec:
    """Leduc's rules with a larger deck and more raises a round (raise 2 then 4)."""
    return GameSpec(
        f"leduc_variant(r{ranks},s{suits},x{raises})",
        ranks=ranks,
        suits=suits,
        rounds=2,
        max_raises=raises,
        raise_sizes=(2, 4),
    )


@dataclass(frozen=True)
class FlatGame:
    """The betting tree as arrays, plus the deck size the kernels need."""

    spec: GameSpec
    nodes: np.ndarray  # (num_nodes, NUM_COLUMNS) int64; node 0 is the root
    children: np.ndarray  # (num_edges,) int64; children of node n: children[FIRST : FIRST + NACT]
    num_infosets: int

    @property
    def cards(self) -> int:
        return self.spec.cards

    @property
    def num_nodes(self) -> int:
        return int(self.nodes.shape[0])


def flatten(spec: GameSpec) -> FlatGame:
    """Build the betting tree depth-first and number the information sets densely."""
    if spec.rounds not in (1, 2) or len(spec.raise_sizes) != spec.rounds:
        raise ValueError(f"{spec.name}: rounds must be 1 or 2 with one raise size each")
    needed = 2 + (spec.rounds - 1)
    if spec.cards < needed:
        raise ValueError(f"{spec.name}: {spec.cards} cards cannot deal {needed}")
    c = spec.cards
    rows: list[list[int]] = []
    child_lists: list[list[int]] = []
    next_base = 0

    def new_node(kind: int, player: int, rnd: int, contrib: tuple[int, int], winner: int = -1) -> int:
        rows.append([kind, player, rnd, -1, 0, -1, contrib[0], contrib[1], winner])
        child_lists.append([])
        return len(rows) - 1

    def build(rnd: int, contrib: tuple[int, int], stakes: int, raises: int, calls: int, player: int) -> int:
        nonlocal next_base
        node = new_node(DECISION, player, rnd, contrib)
        rows[node][BASE] = next_base
        next_base += c if rnd == 0 else c * (c - 1)
        kids = child_lists[node]
        other = 1 - player
        if stakes > contrib[player]:  # fold only when facing a bet
            kids.append(new_node(FOLD, player, rnd, contrib, winner=other))
        # call (a check when nothing is owed)
        called = list(contrib)
        called[player] = stakes
        called_t = (called[0], called[1])
        if (raises == 0 and calls + 1 == 2) or (raises > 0 and calls + 1 == 1):
            if rnd + 1 == spec.rounds:
                kids.append(new_node(SHOWDOWN, -1, rnd, called_t))
            else:
                chance = new_node(CHANCE, -1, rnd, called_t)
                child_lists[chance].append(build(rnd + 1, called_t, stakes, 0, 0, 0))
                kids.append(chance)
        else:
            kids.append(build(rnd, called_t, stakes, raises, calls + 1, other))
        if raises < spec.max_raises:
            raised = list(contrib)
            new_stakes = stakes + spec.raise_sizes[rnd]
            raised[player] = new_stakes
            kids.append(build(rnd, (raised[0], raised[1]), new_stakes, raises + 1, 0, other))
        return node

    build(0, (spec.ante, spec.ante), spec.ante, 0, 0, 0)
    children: list[int] = []
    for node, kids in enumerate(child_lists):
        rows[node][FIRST] = len(children)
        rows[node][NACT] = len(kids)
        children.extend(kids)
    return FlatGame(
        spec=spec,
        nodes=np.asarray(rows, dtype=np.int64),
        children=np.asarray(children, dtype=np.int64),
        num_infosets=next_base,
    )


def count_infosets(spec: GameSpec) -> int:
    """Information sets of `spec` without building the solver tables."""
    return flatten(spec).num_infosets
