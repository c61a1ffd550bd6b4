"""The knobs `harness tune` may move: `--knob NAME=RANGE[@GROUP]`, their values in order, and
which moves relieve what limits a cell.

A RANGE is a list (`1,2,4,8` or `event,poll`), an integer range (`1..16`, every integer; or
`2..64:2`, every second one) or a log range (`1..1024:log`, doubling from the low end, the
high end included). Numbers sort, so a knob whose values are all numbers is *ordered*: tune
steps along it up or down. Any other list is *categorical*: tune tries its values by name.
`@GROUP` says which process group (harness causal's roles or --group names) the knob acts
on, for a program whose suite cannot say so.

Every value is validated by the suite's Params before anything runs, so a bad range is a
UserError (exit 2) naming the knob, the value and what the suite allows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.errors import UserError
from harness.model.params import validate
from harness.model.vocabulary import Advice, Move, Vocabulary

MAX_VALUES = 256  # a range longer than this is a typo, or a job for a sampler
_RANGE = re.compile(r"^\s*(?P<lo>-?[\d.]+)\s*\.\.\s*(?P<hi>-?[\d.]+)\s*(?::\s*(?P<step>log|[\d.]+))?\s*$")
FORMS = "a list (1,2,4 or event,poll), an integer range (1..16, 2..64:2) or a log range (1..1024:log)"


@dataclass(frozen=True)
class Knob:
    name: str
    values: tuple[Any, ...]  # ascending when ordered; as given when categorical
    ordered: bool
    group: str | None = None  # the process group it acts on (@GROUP)
    text: str = ""  # as the user wrote it

    def index(self, value: Any) -> int | None:
        """Where `value` sits among the knob's values (None: not one of them)."""
        for i, v in enumerate(self.values):
            if _same(v, value):
                return i
        return None

    def typed(self, value: Any) -> Any:
        """`value` (a --set's text) as the knob's values are typed: the value it matches, else
        a number for an ordered knob. A program's placeholders are not typed by its suite's
        params, so `--set steps=32` stayed the text "32" (a TOML string in the winner's spec)."""
        at = self.index(value)
        if at is not None:
            return self.values[at]
        number = _number(str(value)) if self.ordered else None
        return value if number is None else number

    def step(self, value: Any, toward: str, stride: int = 1) -> Any | None:
        """The value `stride` places up or down from `value` (from outside the range: its
        nearest value that way is the first place); None past the range's end."""
        if not self.ordered or stride < 1:
            return None
        at = self.index(value)
        if at is None:
            beyond = [i for i, v in enumerate(self.values) if (float(v) > float(value)) == (toward == "up")]
            if not beyond:
                return None
            at = beyond[0] if toward == "up" else beyond[-1]
            stride -= 1
        target = at + stride if toward == "up" else at - stride
        return self.values[target] if 0 <= target < len(self.values) else None


def _same(a: Any, b: Any) -> bool:
    if (
        isinstance(a, int | float)
        and isinstance(b, int | float)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        return math.isclose(float(a), float(b))
    return str(a) == str(b)


def _number(text: str) -> int | float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() and "." not in text else value


def _expand_range(name: str, text: str) -> list[int | float] | None:
    match = _RANGE.match(text)
    if match is None:
        return None
    lo, hi, step = _number(match["lo"]), _number(match["hi"]), match["step"]
    if lo is None or hi is None:
        raise UserError(f"--knob {name}={text}: the ends of a range are numbers; {FORMS}")
    if hi < lo:
        raise UserError(f"--knob {name}={text}: the range runs from low to high; {FORMS}")
    if step == "log":
        if lo <= 0:
            raise UserError(f"--knob {name}={text}: a log range starts above 0; {FORMS}")
        values: list[int | float] = []
        value = lo
        while value < hi and len(values) <= MAX_VALUES:
            values.append(value)
            value = value * 2
        values.append(hi)
        return values
    stride = _number(step) if step else 1
    if not stride or stride <= 0:
        raise UserError(f"--knob {name}={text}: a range's step is a number above 0; {FORMS}")
    if not all(isinstance(v, int) for v in (lo, hi, stride)):
        raise UserError(f"--knob {name}={text}: ranges step over integers; list other values (0.5,1,2); {FORMS}")
    count = (hi - lo) // stride + 1
    if count > MAX_VALUES:
        raise UserError(f"--knob {name}={text}: {count} values, more than {MAX_VALUES}; use a log range (lo..hi:log)")
    return list(range(lo, hi + 1, stride))


def parse_knob(text: str) -> Knob:
    """`NAME=RANGE[@GROUP]` -> Knob (values not yet validated against a suite: `check`)."""
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep or not name or not rest.strip():
        raise UserError(f"--knob expects NAME=RANGE[@GROUP], got {text!r}; RANGE is {FORMS}")
    spec, _, group = rest.rpartition("@") if "@" in rest else (rest, "", "")
    group = group.strip() or None
    numbers = _expand_range(name, spec)
    if numbers is not None:
        values: list[Any] = numbers
    else:
        values = [v.strip() for v in spec.split(",")]
        if any(v == "" for v in values):
            raise UserError(f"--knob {name}: an empty value in {spec!r}; RANGE is {FORMS}")
        parsed = [_number(v) for v in values]
        if all(p is not None for p in parsed):
            values = parsed
    ordered = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    if ordered:
        values = sorted(set(values), key=float)
    elif len(set(map(str, values))) != len(values):
        raise UserError(f"--knob {name}: a value appears twice in {spec!r}")
    if len(values) < 2:
        raise UserError(f"--knob {name}={spec}: one value is a --set, not a knob to tune; give two or more")
    return Knob(name, tuple(values), ordered, group, text)


def check(knobs: Sequence[Knob], suite: str, model: type, fixed: Mapping[str, Any]) -> list[Knob]:
    """Every value of every knob validated with the fixed params (UserError, exit 2, naming
    the knob and what the suite allows); each knob's values as the Params model types them."""
    names = [k.name for k in knobs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"--knob {', '.join(twice)} given twice: one range per knob")
    clash = sorted(set(names) & set(fixed))
    if clash:
        raise UserError(f"--knob {', '.join(clash)} is also a --set: a knob is tuned, a --set is fixed; drop one")
    out = []
    for knob in knobs:
        typed = []
        for value in knob.values:
            params = validate(suite, model, {**fixed, knob.name: value})
            typed.append(params.model_dump(mode="json").get(knob.name, value))
        out.append(Knob(knob.name, tuple(typed), knob.ordered, knob.group, knob.text))
    return out


def moves_for(words: Vocabulary, limit: str, params: Mapping[str, Any]) -> list[Move]:
    """The moves that relieve `limit` (a group's role or a rule's symptom), first to try
    first: the suite's `relieves`, then the knob values its remedies' Advice asks for (those
    the cell does not have yet)."""
    moves = list(words.relieves.get(limit, ()))
    remedy = words.remedies.get(limit)
    if isinstance(remedy, tuple):
        for advice in remedy:
            if isinstance(advice, Advice) and not advice.already(params):
                moves += [Move(knob, value) for knob, value in advice.sets.items()]
    seen: set[tuple[str, str]] = set()
    unique = []
    for move in moves:
        key = (move.knob, str(move.toward))
        if key not in seen:
            seen.add(key)
            unique.append(move)
    return unique
