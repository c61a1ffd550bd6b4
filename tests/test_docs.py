"""docs/architecture.md stays true: it names every module of the harness; the recipes of
docs/guide/extending.md (add a suite, a backend, a diagnosis rule, an export) hold for what is
registered today, and the files they name exist."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from harness.diagnosis.needs import Needs
from harness.diagnosis.rules import RULES
from harness.report.exports import EXPORTS, exporter
from tests.harness.constructed_runs import cells, make_run

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()


def test_the_architecture_names_every_module_of_the_harness():
    missing = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        if path.name == "__init__.py" or path.parent.name == "rules":
            continue
        if not re.search(rf"\b{re.escape(path.name)}", ARCHITECTURE):
            missing.append(str(path.relative_to(ROOT)))
    assert not missing, f"docs/architecture.md does not name: {', '.join(missing)}"


def test_every_rule_module_is_registered_documented_and_named():
    folder = ROOT / "harness" / "diagnosis" / "rules"
    modules = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    registered = {rule.__module__.rsplit(".", 1)[1] for rule in RULES}
    assert registered == set(modules), "a rule module is missing from RULES (or RULES names a stranger)"
    for name in modules:
        module = importlib.import_module(f"harness.diagnosis.rules.{name}")
        assert module.RULE.isupper() and module.check in RULES
        assert isinstance(module.NEEDS, Needs), f"{name}: NEEDS declares the evidence its findings rest on"
        assert module.__doc__ and module.RULE in module.__doc__, f"{name}: the docstring names its rule"


def test_the_extending_recipes_name_files_that_exist_and_the_registries_they_edit():
    extending = (ROOT / "docs" / "guide" / "extending.md").read_text()
    named = set(re.findall(r"`((?:tests|harness|suites)/[\w/]+\.py)`", extending))
    assert {"tests/toys/toy_suite.py", "harness/diagnosis/rules/__init__.py", "harness/report/exports.py"} <= named
    missing = sorted(path for path in named if not (ROOT / path).is_file())
    assert not missing, f"docs/guide/extending.md names files that do not exist: {missing}"
    assert "RULES" in (ROOT / "harness/diagnosis/rules/__init__.py").read_text()
    assert "EXPORTS" in (ROOT / "harness/report/exports.py").read_text()
    assert "guide/extending.md" in ARCHITECTURE, "docs/architecture.md points to the recipes"


def test_the_diagnoses_page_has_a_row_for_every_registered_rule():
    page = (ROOT / "docs" / "guide" / "diagnoses.md").read_text()
    names = {importlib.import_module(rule.__module__).RULE for rule in RULES}
    missing = sorted(name for name in names if f"| {name} " not in page)
    assert not missing, f"docs/guide/diagnoses.md has no row for {missing}"


def test_the_suites_page_names_every_suite_and_every_spec():
    from harness.model.registry import discover

    page = (ROOT / "docs" / "guide" / "suites.md").read_text()
    suites, _ = discover()
    missing = [f"suite {name}" for name in sorted(suites) if f"**{name}**" not in page]
    missing += [f"configs/{p.name}" for p in sorted((ROOT / "configs").glob("*.toml")) if f"`{p.name}`" not in page]
    assert not missing, f"docs/guide/suites.md does not name: {missing}"


# Exports that need an extra, and whose writing their own tests check (tests/harness/
# test_exports_training.py, test_exports_dashboards.py): MLflow's store takes seconds to create.
NEEDS = {"tensorboard": "tensorboardX", "mlflow": "mlflow"}


def test_every_export_has_its_flag_and_writes_a_file(cli, tmp_path):
    import importlib.util

    help_text = cli("export", "--help").output
    run = make_run(tmp_path / "run", cells())
    for name in EXPORTS:
        assert f"--{name.replace('_', '-')}" in help_text, name
        if name == "mlflow" or (name in NEEDS and importlib.util.find_spec(NEEDS[name]) is None):
            continue
        out = tmp_path / f"{name}.out"
        count, _ = exporter(name)(run, out, None)
        written = [out] if out.is_file() else [p for p in out.rglob("*") if p.is_file()]
        assert count > 0 and written and all(p.stat().st_size > 0 for p in written), name


@pytest.mark.slow
def test_the_gate_campaigns_counts_in_the_docs_are_what_its_raw_files_give():
    """docs/benchmarks.md quotes the A/B campaign; `gate_trial.py --analyze` recomputes it from
    the committed raw files, so a count edited by hand (or data added without the docs) fails."""
    import subprocess
    import sys

    data = [ROOT / "benchmarks" / "data" / f"ab_trial-campaign{tail}.json" for tail in ("", "-mccfr")]
    printed = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gate_trial.py"), "--analyze", *map(str, data)],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout  # fmt: skip
    docs = (ROOT / "docs" / "benchmarks.md").read_text()
    arms = {"1.1x": "10 % slower", "1.05x": "5 % slower", "same": "identical"}
    found = re.findall(r"^  (\w+) (1\.1x|1\.05x|same): regression (\d+)/(\d+)", printed, re.MULTILINE)
    assert len(found) == 6, printed
    for cell, arm, k, n in found:
        row = next(line for line in docs.splitlines() if line.startswith(f"| {cell} | {arms[arm]}"))
        assert f"| {n} | **{k}** |" in row, (row, k, n)
    combined = re.findall(r"^  (?:1\.1x|1\.05x|same): regression (\d+/\d+)", printed, re.MULTILINE)
    assert len(combined) == 3 and all(f"{c} " in docs or f"{c}**" in docs for c in combined), combined


@pytest.mark.slow
def test_the_replayed_variants_in_the_docs_are_what_the_raw_files_give():
    """The A/B gate's record quotes `gate_trial.py --replay` predictions (tighter tolerances, one
    pair a block); each replay row is seeded, so the printed shares are exact and the record's
    table must carry them."""
    import subprocess
    import sys

    data = [str(ROOT / "benchmarks" / "data" / f"ab_trial-campaign{tail}.json") for tail in ("", "-mccfr")]
    script = str(ROOT / "benchmarks" / "gate_trial.py")
    row = re.compile(r"^\s*(spin|mccfr)\s+(1\.1x|1\.05x|same)\s+([\d.]+)% \|\s+([\d.]+)%\s+([\d.]+)%", re.MULTILINE)
    printed: dict[tuple[str, str], list[str]] = {}
    # the two replays are independent: run side by side (each is single-threaded, ~20 s)
    procs = [
        subprocess.Popen([sys.executable, script, "--replay", *data, *extra], stdout=subprocess.PIPE, text=True)
        for extra in (["--tolerances", "0.03,0.025,0.02"], ["--first-pair-only"])
    ]
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out
        for cell, arm, _tolerance, regression, ok in row.findall(out):
            printed.setdefault((cell, arm), []).append(
                f"{ok} % / {regression} %" if arm == "same" else f"{regression} %"
            )
    assert len(printed) == 6 and all(len(v) == 4 for v in printed.values()), printed
    docs = (ROOT / "docs" / "records" / "2026-11-23-ab-gate.md").read_text()
    arms = {"1.1x": "10 % slower: regression", "1.05x": "5 % slower: regression", "same": "identical: ok / regression"}
    for (cell, arm), shares in printed.items():
        line = next(line for line in docs.splitlines() if line.startswith(f"| {cell} | {arms[arm]} |"))
        assert [c.strip() for c in line.strip("|").split("|")][3:] == shares, (line, shares)


def test_gate_trial_replay_refuses_a_missing_file_and_a_bad_tolerance():
    import subprocess
    import sys

    script = str(ROOT / "benchmarks" / "gate_trial.py")
    for args in (["--replay", "no-such-file.json"], ["--replay", __file__, "--tolerances", "3"]):
        done = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
        assert done.returncode == 2 and "error: --" in done.stderr, done.stderr


AREA_LINES_MAX = 25  # a short table and the lines that say how it was measured


def test_the_readme_is_a_tour_and_the_benchmarks_page_holds_current_figures_with_their_records():
    """A README read in minutes (install and tests first, then the four questions in order,
    each with its command), and a benchmarks page of the figures that stand: one table an
    area, each area with its date and a link to its record (the notes live in docs/records/)."""
    readme = (ROOT / "README.md").read_text()
    lines = readme.splitlines()
    assert len(lines) <= 220, len(lines)
    assert any("harness sweep" in line for line in lines[:10]) and any("pytest" in line for line in lines[:10])
    questions = [readme.index(f"## {n}. ") for n in (1, 2, 3, 4)]
    assert questions == sorted(questions), "the four questions, in order"
    for n, command in zip((1, 2, 3, 4), ("harness sweep", "harness causal", "harness tune", "harness ab"), strict=True):
        part = readme[questions[n - 1] :]
        assert command in part[: part.find("\n## ", 4)], f"question {n} shows `{command}`"
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    areas = re.split(r"^## ", page, flags=re.MULTILINE)[1:]
    for area in areas:
        title = area.splitlines()[0]
        assert len(area.splitlines()) <= AREA_LINES_MAX, f"{title}: over {AREA_LINES_MAX} lines; move superseded figures to its record"
        assert re.search(r"\b2026-\d\d-\d\d\b", area), f"{title}: no date"
        links = re.findall(r"\]\((records/[\w.-]+\.md)(?:#[\w-]+)?\)", area)
        assert links, f"{title}: no link to its record"
        assert all((ROOT / "docs" / link).is_file() for link in links), links
        tables = len(re.findall(r"^\| --- ", area, flags=re.MULTILINE))
        assert tables <= 1, f"{title}: {tables} tables; one short table an area"
