"""Finding suites: the `harness.suites` entry-point group, plus HARNESS_SUITES.

The built-in suites register the same way as a team's own package would, so nothing in
the harness names a suite. `HARNESS_SUITES="name=module:attr,..."` adds suites that are not
installed as a distribution (a suite under development, a test's toy suite), and
`HARNESS_PLUGINS="module,..."` imports modules first (a test's toy backend registering
itself with a suite). Both are inherited by every cell's interpreter, so what the
command line found, the cell finds too.
"""

from __future__ import annotations

import importlib
import os
from functools import cache
from importlib.metadata import entry_points
from typing import Any

from harness.errors import UserError
from harness.model.suite import Suite
from harness.model.vocabulary import OWN_VOCABULARIES, Vocabulary

GROUP = "harness.suites"
# A suite that is not installed here is read by the conventions alone (docs/architecture.md).
UNKNOWN_SUITE = Vocabulary(workers="workers", backend="backend", device="device")
ENV_SUITES = "HARNESS_SUITES"
ENV_PLUGINS = "HARNESS_PLUGINS"


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split(".") if attr else []:
        obj = getattr(obj, part)
    return obj


def _extra_suites() -> list[tuple[str, str]]:
    out = []
    for item in filter(None, (s.strip() for s in os.environ.get(ENV_SUITES, "").split(","))):
        name, sep, target = item.partition("=")
        if not sep or not name or ":" not in target:
            raise UserError(f"{ENV_SUITES}: {item!r} is not name=module:attribute")
        out.append((name.strip(), target.strip()))
    return out


@cache
def discover() -> tuple[dict[str, Suite], dict[str, str]]:
    """Loaded suites by name, and the suites that failed to load with why."""
    for module in filter(None, (m.strip() for m in os.environ.get(ENV_PLUGINS, "").split(","))):
        importlib.import_module(module)
    found = [(ep.name, ep.value, ep.load) for ep in entry_points(group=GROUP)]
    found += [(name, target, lambda target=target: _load(target)) for name, target in _extra_suites()]
    suites: dict[str, Suite] = {}
    broken: dict[str, str] = {}
    for name, target, load in found:
        try:
            obj = load()
        except Exception as exc:  # a broken third-party suite must not take the CLI down
            broken[name] = f"{type(exc).__name__}: {exc}"
            continue
        if not isinstance(obj, Suite):
            broken[name] = f"{target} is a {type(obj).__name__}, not a harness.probe.Suite"
            continue
        suites[name] = obj
    return suites, broken


@cache
def distribution_of(name: str) -> str | None:
    """The installed distribution whose entry point provides this suite (its extras are
    installed as `pip install "DIST[extra]"`), or None for a HARNESS_SUITES suite."""
    for ep in entry_points(group=GROUP):
        if ep.name == name and ep.dist is not None:
            return ep.dist.name
    return None


def not_ready(name: str, suite: Suite) -> str | None:
    """None when the suite's required modules are installed, else what is missing and the
    command that installs it."""
    missing = suite.missing()
    if not missing:
        return None
    dist = distribution_of(name)
    if suite.extra and dist:
        how = f'pip install "{dist}[{suite.extra}]" (in a clone: pip install -e ".[{suite.extra}]")'
    elif suite.extra:
        how = f"install the [{suite.extra}] extra of the package that provides suite {name!r}"
    else:
        how = "pip install " + " ".join(missing)
    return f"needs {', '.join(missing)}, not installed here: {how}"


def ready_suite(name: str) -> Suite:
    """get_suite() for running a cell: a suite whose required modules are missing is a
    UserError (exit 2) naming the extra that installs them."""
    suite = get_suite(name)
    problem = not_ready(name, suite)
    if problem:
        raise UserError(f"suite {name!r} {problem}")
    return suite


def get_suite(name: str) -> Suite:
    suites, broken = discover()
    if name in suites:
        return suites[name]
    if name in broken:
        raise UserError(f"suite {name!r} could not be loaded: {broken[name]}")
    raise UserError(f"unknown suite {name!r}; available: {', '.join(sorted(suites)) or 'none'}")


@cache
def vocabulary_of(name: str) -> Vocabulary:
    """The suite's resolved vocabulary; the empty one when the suite is not installed here
    (a baseline or run directory from another checkout still reads, by conventions). The
    harness's own pseudo-suites (`watch`) have theirs in OWN_VOCABULARIES."""
    if name in OWN_VOCABULARIES:
        return OWN_VOCABULARIES[name]
    try:
        return get_suite(name).words
    except UserError:
        return UNKNOWN_SUITE


@cache
def suite_defaults(name: str) -> dict[str, Any] | None:
    """The suite's default params as JSON values, or None when it is not installed here."""
    try:
        model = get_suite(name).params
    except UserError:
        return None
    return model().model_dump(mode="json")
