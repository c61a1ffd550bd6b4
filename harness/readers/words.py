"""What a logged key means: a monotone progress counter, a rate, or any other value.

Programs name their progress in a handful of ways (`global_step`, `total_timesteps`,
`Iteration`, `frames`, `episodes`, `total_envstep_count`); a key whose last word is one of
these (or a word that ends in one: `envstep`), or that ends in `_count`, is a counter, and
the counter's metric name is the key in snake_case, made plural when it is a bare singular
word (`Iteration 4500` -> `iterations`, `step=500` -> `steps`). The unit a counter counts
is its last unit word: `total_envstep_count` counts steps, `update_step` and `train_steps`
updates (a learner's steps are not an environment's). A key that says
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
    "frame frames sample samples step steps timestep timesteps interaction interactions transition transitions "
    "move moves token tokens eval evals evaluation evaluations node nodes "
    "iteration iterations iter iters it update updates batch batches rollout rollouts "
    "episode episodes game games epoch epochs generation generations gen gens round rounds"
).split()
# singular (or abbreviation) -> plural, as pairs: `Iteration 4500` counts iterations
COUNTER_WORDS = frozenset(_COUNTER_FORMS)
_PLURAL = dict(
    pair.split(":")
    for pair in (
        "frame:frames sample:samples step:steps timestep:timesteps interaction:interactions "
        "transition:transitions move:moves "
        "token:tokens eval:evals evaluation:evaluations node:nodes iteration:iterations iter:iterations "
        "iters:iterations it:iterations update:updates batch:batches rollout:rollouts episode:episodes "
        "game:games epoch:epochs generation:generations gen:generations gens:generations round:rounds"
    ).split()
)
# Coarser units later: a program that counts frames and episodes is judged by its frames.
HEADLINE_ORDER = (
    "frames samples timesteps steps interactions transitions tokens moves evals evaluations nodes iterations updates "
    "batches rollouts episodes games rounds generations epochs"
).split()
# Words that make a counter-looking key something else: `ep_len_mean` is a value,
# `steps_per_second` a rate, `time_elapsed` a value, EvoTorch's `pop_best_eval` a fitness.
_STATISTICS = frozenset("mean avg average median std min max best worst".split())  # of some other number
_NOT_A_COUNT = set("rate per time elapsed loss len length ratio".split()) | _STATISTICS
RATE_WORDS = frozenset({"fps", "sps", "ips", "tps", "throughput"})
# Words that say "how many" around a unit (`total_envstep_count`, `num_frames`): not the unit
_HOW_MANY = {"total", "count", "counts", "num", "number", "n", "cumulative", "cum"}
# Unit words that also end compound words (`envstep`, `agentsteps`, `trainsamples`)
_COMPOUND_ENDINGS = ("steps", "step", "frames", "frame", "samples", "sample", "episodes", "episode", "transitions")
# A learner's steps or iterations are updates, not environment steps: `update_step`, `train_iter`
_LEARNER_WORDS = set("update updates train training gradient grad learn learner optim optimizer sgd".split())
_LEARNER_COUNTS = set("steps iterations".split())  # what a learner word before them makes updates
# A program's own clock: `time_elapsed`, `elapsed`, `elapsed_time_s` (seconds)
_CLOCK_WORDS = {"time", "elapsed", "s", "sec", "secs", "seconds", "total", "wall"}
_RATE_FORMS = re.compile(r"(^|_)(per_s|per_sec|per_second|per_min|per_minute|it_s|s_it)$")


_WORDS = re.compile(r"[A-Za-z]+")
CONTEXT_WORDS = 3


def context(text_before: str) -> str:
    """Which report a number came from: the first words of the line before it, letters only
    (`Epoch #2: 10%|...| 1032/10000 [...` -> `Epoch`, `[EVALUATOR]env 4 finish episode` ->
    `EVALUATOR env finish`), so a redraw with other digits is the same report and an
    evaluator's `episode: 3` is not the trainer's."""
    return " ".join(_WORDS.findall(text_before)[:CONTEXT_WORDS])


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
    if _RATE_FORMS.search(name) or RATE_WORDS & set(tokens):
        return "rate"
    if _NOT_A_COUNT & set(tokens):
        return "value"
    if tokens[-1] == "count" and len(tokens) > 1:
        return "counter"  # `total_envstep_count`, `episode_count`: a count, whatever it counts
    if _unit_word(tokens) is not None:
        return "counter"
    return "value"


def _unit_word(tokens: list[str]) -> str | None:
    """The unit a key's words count, plural (`["total", "envstep", "count"]` -> `steps`), or
    None when its last word (the how-many words aside) is no unit."""
    words = [t for t in tokens if t not in _HOW_MANY] or tokens[-1:]
    last = words[-1]
    if last in _COUNTER_FORMS:
        return _PLURAL.get(last, last)
    if len(words) == 1 and "_".join(tokens[-2:]) in _COUNTER_FORMS:
        return _PLURAL.get("_".join(tokens[-2:]))
    for ending in _COMPOUND_ENDINGS:
        if last.endswith(ending) and len(last) > len(ending) + 1:
            return _PLURAL.get(ending, ending)
    return None


def is_statistic(key: str) -> bool:
    """A statistic of some other number (`max`, `ep_rew_mean`, `pop_best_eval`): it may grow,
    but it counts nothing."""
    return bool(_STATISTICS & set(snake(leaf(key)).split("_")))


def is_clock(key: str) -> bool:
    """A program's elapsed seconds (`time_elapsed`, `time/elapsed`, `elapsed`): what its own
    clock says, to hold the harness's against."""
    tokens = set(snake(leaf(key)).split("_"))
    return "elapsed" in tokens and tokens <= _CLOCK_WORDS


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


@lru_cache(maxsize=4096)
def unit_of(counter: str) -> str:
    """The unit a counter counts (`total_timesteps` -> `timesteps`, `total_envstep_count` ->
    `steps`, `update_step` -> `updates`), to pair it with a rate and rank it."""
    tokens = counter.split("_")
    unit = _unit_word(tokens) or _PLURAL.get(tokens[-1], tokens[-1])
    if unit in _LEARNER_COUNTS and _LEARNER_WORDS & set(tokens[:-1]):
        return _PLURAL["update"]
    return unit


_RATE_SUFFIX = re.compile(r"(_per_s|_per_sec|_per_second|_per_min|_per_minute|_it_s|_s_it)$")


def rate_unit(printed: str) -> str:
    """The unit a printed rate counts: `printed_it_per_s` -> `iterations`,
    `printed_avg_envstep_per_sec` -> `steps`, `printed_fps` -> `fps` (no unit of its own)."""
    stem = _RATE_SUFFIX.sub("", printed.removeprefix("printed_"))
    words = [t for t in stem.split("_") if t not in _NOT_A_COUNT and t not in _HOW_MANY] or [stem]
    return unit_of("_".join(words))


_FAMILIES = {"timesteps": "steps", "interactions": "steps"}  # EvoTorch's interactions are environment steps


def family(counter: str) -> str:
    """What a counter counts, for holding counters of the same thing against each other:
    `env_step`, `total_timesteps` and `total_envstep_count` all count environment steps."""
    unit = unit_of(counter)
    return _FAMILIES.get(unit, unit)


@lru_cache(maxsize=4096)
def reading_kind_name(key: str) -> tuple[Kind, str]:
    kind = kind_of(key)
    if kind == "counter":
        return kind, counter_name(key)
    if kind == "rate":
        return kind, rate_name(key)
    return kind, value_name(key)
