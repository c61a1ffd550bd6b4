"""What a logged key means: a monotone progress counter, a rate, or any other value.

Programs name their progress in a handful of ways (`global_step`, `total_timesteps`,
`Iteration`, `frames`, `episodes`); a key whose last word is one of these is a counter,
and the counter's metric name is the key in snake_case, made plural when it is a bare
singular word (`Iteration 4500` -> `iterations`, `step=500` -> `steps`). A key that says
"per second" (`fps`, `sps`, `it/s`, `steps_per_second`) is a printed rate. Everything else
is a value. Counters are ranked by how fine a unit they count: the finest one present is
the headline (a frame rate says more, sooner, than an episode rate).
"""

from __future__ import annotations

import re
from functools import lru_cache

from harness.readers.protocol import Kind

# The last word of a counter's key, finest unit first (its rank in HEADLINE_ORDER).
_COUNTER_FORMS = (
    "frame frames sample samples step steps timestep timesteps transition transitions "
    "move moves token tokens eval evals evaluation evaluations node nodes "
    "iteration iterations iter iters it update updates batch batches rollout rollouts "
    "episode episodes game games epoch epochs generation generations round rounds"
).split()
# singular (or abbreviation) -> plural, as pairs: `Iteration 4500` counts iterations
COUNTER_WORDS = frozenset(_COUNTER_FORMS)
_PLURAL = dict(
    pair.split(":")
    for pair in (
        "frame:frames sample:samples step:steps timestep:timesteps transition:transitions move:moves "
        "token:tokens eval:evals evaluation:evaluations node:nodes iteration:iterations iter:iterations "
        "iters:iterations it:iterations update:updates batch:batches rollout:rollouts episode:episodes "
        "game:games epoch:epochs generation:generations round:rounds"
    ).split()
)
# Coarser units later: a program that counts frames and episodes is judged by its frames.
HEADLINE_ORDER = (
    "frames samples timesteps steps transitions tokens moves evals evaluations nodes iterations updates "
    "batches rollouts episodes games rounds generations epochs"
).split()
# Words that make a counter-looking key something else: `ep_len_mean` is a value,
# `steps_per_second` a rate, `time_elapsed` a value.
_NOT_A_COUNT = set("mean avg average median std min max rate per time elapsed loss len length ratio".split())
_RATE_WORDS = {"fps", "sps", "ips", "tps", "throughput"}
_RATE_FORMS = re.compile(r"(^|_)(per_s|per_sec|per_second|per_min|per_minute|it_s|s_it)$")


def snake(key: str) -> str:
    """`Total num frames` -> `total_num_frames`; `time/fps` -> `time_fps`."""
    return re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")


def leaf(key: str) -> str:
    """The last part of a grouped key: `rollout/ep_rew_mean` -> `ep_rew_mean`."""
    return key.rstrip("/").rsplit("/", 1)[-1].rsplit(".", 1)[-1] if "/" in key else key


@lru_cache(maxsize=4096)  # a program prints the same keys every report
def kind_of(key: str) -> Kind:
    """What a key names, from its words alone."""
    name = snake(leaf(key))
    tokens = name.split("_")
    if not tokens or not name:
        return "value"
    if _RATE_FORMS.search(name) or _RATE_WORDS & set(tokens):
        return "rate"
    if _NOT_A_COUNT & set(tokens):
        return "value"
    if tokens[-1] in _COUNTER_FORMS or "_".join(tokens[-2:]) in _COUNTER_FORMS:
        return "counter"
    return "value"


@lru_cache(maxsize=4096)
def counter_name(key: str) -> str:
    """The metric name of a counter key: snake_case, a bare singular made plural."""
    name = snake(leaf(key))
    return _PLURAL.get(name, name)


def value_name(key: str) -> str:
    return snake(leaf(key)) or "value"


def per_second_name(unit: str) -> str:
    """A printed rate with its unit, per second: `it` -> `printed_it_per_s` (feed.py reads
    the unit back to pair the rate with its counter)."""
    return f"printed_{snake(unit) or 'rate'}_per_s"


def rate_name(key: str) -> str:
    """A printed rate's metric: `printed_<key>` (it is the program's number, not ours)."""
    return f"printed_{snake(leaf(key)) or 'rate'}"


def rank(counter: str) -> int:
    """How fine a counter's unit is (lower = finer); unknown units rank last."""
    unit = unit_of(counter)
    return HEADLINE_ORDER.index(unit) if unit in HEADLINE_ORDER else len(HEADLINE_ORDER)


def unit_of(counter: str) -> str:
    """The unit a counter counts (`total_timesteps` -> `timesteps`), to pair it with a rate."""
    return _PLURAL.get(counter.split("_")[-1], counter.split("_")[-1])


@lru_cache(maxsize=4096)
def reading_kind_name(key: str) -> tuple[Kind, str]:
    kind = kind_of(key)
    if kind == "counter":
        return kind, counter_name(key)
    if kind == "rate":
        return kind, rate_name(key)
    return kind, value_name(key)
