"""The shape of the code: no import cycles, and a harness that names no suite.

Both read the source as text (ast), so they hold for code no test runs: function-level
imports count as edges too, because a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import typing
from pathlib import Path

import pytest

from harness.analysis.baselines import RUN_FIELDS
from harness.analysis.gating import GATE_VERDICTS, Check
from harness.diagnosis import Finding
from harness.model.registry import discover
from harness.model.vocabulary import CONVENTIONAL_PARAMS, HARNESS_METRICS, HARNESS_REPORT, SIGNALS
from harness.runs.record import Record

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "suites")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """Modules of ours that `path` imports anywhere (the longest known prefix of each name)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            # `from pkg import sub` depends on the submodule; `from pkg import name` on pkg
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        for target in targets:
            parts = target.split(".")
            for i in range(len(parts), 0, -1):
                candidate = ".".join(parts[:i])
                if candidate in known:
                    if candidate != name:
                        found.add(candidate)
                    break
    return found


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(path, name, known) for name, path in mods.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a list of modules, or None (iterative DFS, three colours)."""
    colour = dict.fromkeys(graph, 0)
    for start in sorted(graph):
        if colour[start]:
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        colour[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                colour[node] = 2
                stack.pop()
                path.pop()
            elif colour.get(child) == 1:
                return path[path.index(child) :] + [child]
            elif colour.get(child) == 0:
                colour[child] = 1
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
    return None


def test_no_import_cycles_in_harness_or_suites():
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle)


def test_the_cycle_finder_finds_a_planted_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


# harness/ by phase, bottom to top: a package may import its own layer and those below it,
# never one above (docs/architecture.md, "Layers"). Top-level modules sit in a layer too.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("model",),
    ("cell",),  # inside a cell: the child's entry point and the Probe it makes (cell/probe.py)
    ("probe", "readers", "program"),  # the suites' facade over cell/ and model/; the command suite
    ("runs",),
    ("monitors", "watch"),
    ("running",),
    ("ab", "roofline", "causal", "count"),
    ("analysis", "diagnosis"),
    ("tune",),
    ("report",),
    ("commands",),
    ("cli",),
)
TOP_MODULES_AT_MOST = 8  # the public face: cli, probe, errors, __init__ (and a few more at most)


def layer_of(module: str) -> int | None:
    """The layer of a harness module (`harness.runs.store` -> that of `runs`); None for the
    package root (`harness/__init__.py`: the version and a lazy `harness.load`)."""
    parts = module.split(".")
    if parts[0] != "harness" or len(parts) == 1:
        return None
    for depth, names in enumerate(LAYERS):
        if parts[1] in names:
            return depth
    raise AssertionError(f"{module}: its package {parts[1]!r} is in no layer of LAYERS (docs/architecture.md)")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        low = layer_of(module)
        for target in sorted(targets):
            high = layer_of(target)
            if low is not None and high is not None and high > low:
                found.append(f"{module} (layer {LAYERS[low][0]}) imports {target} (layer {LAYERS[high][0]})")
    return found


def test_no_harness_package_imports_a_layer_above_its_own():
    graph = {name: deps for name, deps in import_graph().items() if name.startswith("harness")}
    up = upward_imports(graph)
    assert not up, "\n".join(up)


def test_the_layer_check_sees_a_planted_upward_import():
    planted = {"harness.runs.store": {"harness.report.html"}, "harness.report.html": {"harness.runs.store"}}
    assert upward_imports(planted) == ["harness.runs.store (layer runs) imports harness.report.html (layer report)"]


@pytest.mark.slow
def test_no_import_cycle_between_the_packages_of_the_harness():
    """Module cycles are caught above; this catches two packages that lean on each other
    through different modules (runner -> watch.instruments while watch.session -> runner)."""
    folders = {p.name for p in (ROOT / "harness").iterdir() if (p / "__init__.py").is_file()}

    def package(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if parts[0] == "harness" and len(parts) > 2 and parts[1] in folders else None

    packages: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        if (source := package(module)) is not None:
            packages.setdefault(source, set()).update(
                target for t in targets if (target := package(t)) not in (None, source)
            )
    cycle = find_cycle(packages)
    assert cycle is None, " -> ".join(cycle)


def test_the_top_of_the_harness_keeps_only_its_public_face():
    top = sorted(p.name for p in (ROOT / "harness").glob("*.py"))
    assert len(top) <= TOP_MODULES_AT_MOST, f"{len(top)} modules at the top of harness/: {top}"


SUMMARIES = ("mean", "p50", "p95", "max", "count", "hist")


def harness_generic_names() -> set[str]:
    """Names the harness owns: its metrics, signals (and an observed signal's summaries),
    conventional params, the fields of its own records and run.json, its gate verdicts."""
    own = set(HARNESS_METRICS) | set(HARNESS_REPORT) | set(SIGNALS) | set(CONVENTIONAL_PARAMS)
    own |= {f"{signal}_{s}" for signal in SIGNALS for s in SUMMARIES}
    own |= {f.name for cls in (Record, Finding, Check) for f in dataclasses.fields(cls)}
    return own | set(RUN_FIELDS) | set(GATE_VERDICTS)


# Choice values that are plain words of the trade (devices, start methods, executors,
# English): the harness may say "cpu" or "server" without meaning a suite's knob.
COMMON_VALUES = {
    "auto", "cpu", "cuda", "delta", "event", "exit", "fork", "forkserver", "full", "hang", "local", "none",
    "poll", "processes", "raise", "ray", "sequential", "server", "shared", "spawn", "spin", "threads",
}  # fmt: skip


def choice_values(model: type) -> set[str]:
    values: set[str] = set()
    for field in model.model_fields.values():
        if typing.get_origin(field.annotation) is typing.Literal:
            values |= {str(v) for v in typing.get_args(field.annotation)}
    return values - COMMON_VALUES


def suite_words() -> dict[str, str]:
    """word -> the suite it belongs to: every suite's name, params, distinctive choice
    values and declared metrics."""
    suites, _ = discover()
    generic = harness_generic_names()
    words: dict[str, str] = {}
    for name, suite in suites.items():
        if suite.run.__module__.startswith("harness."):
            continue  # the harness's own suite (a user's program, harness.program): its to name
        names = {name, *suite.params.model_fields, *choice_values(suite.params), *suite.words.names()}
        for word in names - generic:
            words.setdefault(word, name)
    return words


def string_values(source: str) -> list[tuple[int, str]]:
    """String constants the code uses as values: docstrings (a string standing alone as a
    statement) are prose and left out; comments are not in the tree at all."""
    tree = ast.parse(source)
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
    ]


def suite_names_in(source: str, words: dict[str, str]) -> list[tuple[int, str]]:
    """(line, word) for every string value that IS a suite word (a key such as "max_batch"),
    or holds a snake_case suite word as a token ("{rate}_per_s of nash_conv"). Single plain
    words inside prose ("the command failed") are English, not keys."""
    compound = [w for w in words if "_" in w]
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, compound), key=len, reverse=True)) + r")\b")
    found = []
    for line, text in string_values(source):
        if text in words:
            found.append((line, text))
        elif compound:
            found += [(line, m.group(1)) for m in pattern.finditer(text)]
    return sorted(found)


def test_the_harness_names_no_suite_param_or_metric_of_a_suite():
    words = suite_words()
    assert {"mccfr", "nash_conv", "replay_ratio", "max_batch", "games", "slowdown", "leduc"} <= set(words)
    found = [
        f"{path.relative_to(ROOT)}:{line}: {word!r} ({words[word]})"
        for path in sorted((ROOT / "harness").rglob("*.py"))
        for line, word in suite_names_in(path.read_text(), words)
    ]
    assert not found, "\n".join(found)


def test_the_suite_name_check_sees_planted_names_and_not_prose():
    words = {"nash_conv": "mccfr", "max_batch": "selfplay", "games": "selfplay"}
    planted = 'x = "nash_conv"\ny = f"{a} over max_batch"\nz = m["games"]\n'
    assert suite_names_in(planted, words) == [(1, "nash_conv"), (2, "max_batch"), (3, "games")]
    prose = 'def f():\n    """Reads nash_conv and games."""\n    return "two games"\n'
    assert suite_names_in(prose, words) == []
