"""External-sampling MCCFR (Lanctot, Waugh, Zinkevich, Bowling: "Monte Carlo Sampling for
Regret Minimization in Extensive Games", NIPS 2009) over a flattened betting tree.

One iteration is one traversal per player, as OpenSpiel's `external_sampling_mccfr.py`
counts it. In a traversal for player i, chance and the opponent are sampled (the deal is
drawn once per traversal: every chance node of a traversal sees an independent fresh
draw only through its own path, which keeps each estimate unbiased), and every action of
player i is explored. Regrets use plain regret matching. The average strategy uses
"simple" averaging: the opponent's current policy is added, unweighted, at the opponent's
nodes that the traversal samples. That is OpenSpiel's default, and it is unbiased because
the opponent's reach is exactly what the sampling supplies.

The kernels are numba-jitted with `cache=True` (compiled once per machine, loaded from
`__pycache__` afterwards) and `nogil=True` (threads can run them side by side). They use
their own splitmix64 generator held in a one-element array, so a run depends only on the
seed it was given, never on numba's per-thread generator state.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from suites.mccfr.games import (
    BASE,
    C0,
    C1,
    CHANCE,
    FIRST,
    FOLD,
    KIND,
    NACT,
    PLAYER,
    ROUND,
    SHOWDOWN,
    WINNER,
)

# stats slots filled by run_iterations
NODES, TOUCHED = 0, 1
NUM_STATS = 2

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)


def seed_state(*key: int) -> np.ndarray:
    """A generator state for (seed, batch, worker, ...): independent streams per key."""
    return np.random.SeedSequence([int(k) for k in key]).generate_state(1, dtype=np.uint64)


@njit(cache=True, nogil=True)
def _uniform(rng):
    rng[0] += _GOLDEN
    z = rng[0]
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    z = z ^ (z >> _S31)
    return float(z >> _S11) * (1.0 / 9007199254740992.0)


@njit(cache=True, nogil=True)
def _below(rng, n):
    k = int(_uniform(rng) * n)
    return k if k < n else n - 1


@njit(cache=True, nogil=True)
def slot_of(nodes, node, card, public, cards):
    """Dense information-set index of `node` for a player holding `card`."""
    base = nodes[node, BASE]
    if nodes[node, ROUND] == 0:
        return base + card
    return base + card * (cards - 1) + (public if public < card else public - 1)


@njit(cache=True, nogil=True)
def utility_p0(nodes, node, c0, c1, public, suits, rounds):
    """Player 0's payoff at terminal `node` (what it wins minus what it put in)."""
    if nodes[node, KIND] == FOLD:
        return float(nodes[node, C1]) if nodes[node, WINNER] == 0 else -float(nodes[node, C0])
    r0 = c0 // suits
    r1 = c1 // suits
    if rounds == 2:
        rp = public // suits
        if r0 == rp and r1 != rp:
            return float(nodes[node, C1])
        if r1 == rp and r0 != rp:
            return -float(nodes[node, C0])
    if r0 > r1:
        return float(nodes[node, C1])
    if r1 > r0:
        return -float(nodes[node, C0])
    return 0.0


@njit(cache=True, nogil=True)
def _touch(slot, touched, touched_list, stats):
    if touched[slot] == 0:
        touched[slot] = 1
        touched_list[stats[1]] = slot
        stats[1] += 1


@njit(cache=True, nogil=True)
def _traverse(
    traverser, c0, c1, public, nodes, children, cards, suits, rounds,
    regret, avg, touched, touched_list, stats, rng, f_node, f_slot, f_next, f_strategy, f_values,
):  # fmt: skip
    """One traversal for `traverser`, returning its sampled value at the root.

    Iterative, with an explicit stack of the traverser's nodes (numba cannot load a cached
    self-recursive function): only the traverser's nodes need a frame, since chance and
    opponent nodes pass their one sampled child's value straight up.
    """
    node = 0
    depth = 0
    ret = 0.0
    descending = True
    while True:
        if descending:
            stats[0] += 1
            kind = nodes[node, KIND]
            if kind == FOLD or kind == SHOWDOWN:
                u = utility_p0(nodes, node, c0, c1, public, suits, rounds)
                ret = u if traverser == 0 else -u
                descending = False
                continue
            first = nodes[node, FIRST]
            if kind == CHANCE:  # the public card was drawn with the deal
                node = children[first]
                continue
            player = nodes[node, PLAYER]
            n = nodes[node, NACT]
            slot = slot_of(nodes, node, c0 if player == 0 else c1, public, cards)
            # regret matching
            s0 = regret[slot, 0] if regret[slot, 0] > 0.0 else 0.0
            s1 = regret[slot, 1] if regret[slot, 1] > 0.0 else 0.0
            s2 = regret[slot, 2] if n > 2 and regret[slot, 2] > 0.0 else 0.0
            total = s0 + s1 + s2
            if total > 0.0:
                s0 /= total
                s1 /= total
                s2 /= total
            else:
                s0 = 1.0 / n
                s1 = 1.0 / n
                s2 = 1.0 / n if n > 2 else 0.0
            _touch(slot, touched, touched_list, stats)
            if player == traverser:  # explore every action: push a frame, go to child 0
                f_node[depth] = node
                f_slot[depth] = slot
                f_next[depth] = 1
                f_strategy[depth, 0] = s0
                f_strategy[depth, 1] = s1
                f_strategy[depth, 2] = s2
                depth += 1
                node = children[first]
                continue
            # opponent: "simple" average-strategy update, then sample one action
            avg[slot, 0] += s0
            avg[slot, 1] += s1
            if n > 2:
                avg[slot, 2] += s2
            u = _uniform(rng)
            a = 0 if u < s0 else (1 if (u < s0 + s1 or n == 2) else 2)
            node = children[first + a]
            continue
        # ascending: hand `ret` to the traverser's frame on top of the stack
        if depth == 0:
            return ret
        d = depth - 1
        f_values[d, f_next[d] - 1] = ret
        top = f_node[d]
        n = nodes[top, NACT]
        if f_next[d] < n:
            node = children[nodes[top, FIRST] + f_next[d]]
            f_next[d] += 1
            descending = True
            continue
        slot = f_slot[d]
        value = 0.0
        for a in range(n):
            value += f_strategy[d, a] * f_values[d, a]
        for a in range(n):
            regret[slot, a] += f_values[d, a] - value
        ret = value
        depth = d


@njit(cache=True, nogil=True)
def run_iterations(iterations, nodes, children, cards, suits, rounds, regret, avg, touched, touched_list, stats, rng):
    """`iterations` external-sampling iterations (one traversal per player each).

    Adds the nodes visited to stats[NODES]; every information set whose regret or average
    row changed is flagged in `touched` and listed once in `touched_list[:stats[TOUCHED]]`.
    """
    size = nodes.shape[0] + 1
    f_node = np.zeros(size, np.int64)
    f_slot = np.zeros(size, np.int64)
    f_next = np.zeros(size, np.int64)
    f_strategy = np.zeros((size, 3))
    f_values = np.zeros((size, 3))
    for _ in range(iterations):
        for traverser in range(2):
            c0 = _below(rng, cards)
            c1 = _below(rng, cards - 1)
            if c1 >= c0:
                c1 += 1
            public = -1
            if rounds == 2:
                lo = min(c0, c1)
                hi = max(c0, c1)
                public = _below(rng, cards - 2)
                if public >= lo:
                    public += 1
                if public >= hi:
                    public += 1
            _traverse(
                traverser, c0, c1, public, nodes, children, cards, suits, rounds,
                regret, avg, touched, touched_list, stats, rng, f_node, f_slot, f_next, f_strategy, f_values,
            )  # fmt: skip
