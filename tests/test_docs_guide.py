"""The guide is the product's, held to the CLI: what a user reads must be what the commands do.

- User pages speak of the harness and its measurements only: no issue numbers, nobody who ran
  what, no "this VM" for the machine a figure came from; benchmarks.md and the guide carry no
  commit hashes or run codes in prose (they stay in docs/records/).
- docs/guide/commands.md's exit-code table is each command's own `--help` epilog
  (harness.commands.options.exit_codes), row for row.
- Every default `--help` gives is a value, never a pointer to a page; the defaults the help
  states in words are the constants the code uses; a default a guide table gives is the one
  `--help` gives.
- Every flag of every command is named in a guide section that names that command.
- Guide pages stay short (150 lines) or say at their top why not; the records are one entry of
  the site's navigation and every record is reached from their index.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner

from harness.cli import app
from harness.commands.options import SHARED_EXITS

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide"
WIDE = {"COLUMNS": "240", "TERMINAL_WIDTH": "240", "NO_COLOR": "1"}
USER_PAGES = [ROOT / "README.md", ROOT / "docs" / "index.md", ROOT / "docs" / "benchmarks.md",
              ROOT / "docs" / "architecture.md", *sorted(GUIDE.glob("*.md")),
              *sorted((ROOT / "docs" / "explain").glob("*.md"))]  # fmt: skip
RECORDS = sorted((ROOT / "docs" / "records").glob("*.md"))

# the project's history, which user pages leave to the records (and the records to git)
HISTORY = re.compile(
    r"issue #?\d+|helper-\d+|\ba helper's|\bother helpers\b|\bthe lead\b|\bthis VM\b"
    r"|\b(second|third|fourth|next|this|another|other) sessions?\b|\bour (sweep|run|machine|VM)\b",
    re.IGNORECASE,
)
HASH = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
RUN_CODE = re.compile(r"\b[CZ]\d\b")
LONG_PAGE = 150


def prose(text: str) -> str:
    """The page without its code blocks (output and commands may hold anything)."""
    return re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("page", USER_PAGES + RECORDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_page_keeps_the_projects_history_out(page):
    found = [m.group(0) for m in HISTORY.finditer(page.read_text())]
    assert not found, (
        f"{page.relative_to(ROOT)} says {sorted(set(found))}: say what was run, on what machine, and what it showed"
    )


@pytest.mark.parametrize("page", [ROOT / "docs" / "benchmarks.md", *sorted(GUIDE.glob("*.md"))], ids=lambda p: p.name)
def test_benchmarks_and_guide_prose_carry_no_commit_hashes_or_run_codes(page):
    text = prose(page.read_text())
    found = HASH.findall(text) + RUN_CODE.findall(text)
    assert not found, f"{page.relative_to(ROOT)}: {found} in prose; commits and run codes belong in docs/records/"


# ------------------------------------------------------------------ the commands, from the app itself
def leaf_commands() -> dict[str, Any]:
    """'sweep', 'baseline save', ...: every command a user runs, by its name after `harness`."""
    found: dict[str, Any] = {}

    def walk(command: Any, path: tuple[str, ...]) -> None:
        subs = getattr(command, "commands", None)
        if subs:
            for name, sub in subs.items():
                if not sub.hidden:
                    walk(sub, (*path, name))
        else:
            found[" ".join(path)] = command

    walk(typer.main.get_command(app), ())
    return found


COMMANDS = leaf_commands()


def epilog_codes(name: str) -> dict[int, str]:
    epilog = COMMANDS[name].epilog or ""
    found = re.match(r"Exit codes: (.*)\.$", epilog.strip(), re.DOTALL)
    assert found, f"`harness {name} --help` states no exit codes: declare them with options.exit_codes"
    parts = re.split(r";\s(?=\d{1,3}\s)", " ".join(found.group(1).split()))
    return {int(code): text for code, text in (part.split(" ", 1) for part in parts)}


def help_screen(name: str) -> str:
    result = CliRunner().invoke(app, [*name.split(), "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    return result.output


def option_help(command: Any, flag: str) -> str:
    """One option's help as --help gives it, `[default: X]` included."""
    ctx = command.context_class(command, info_name=command.name)
    for param in command.params:
        if flag in getattr(param, "opts", []) + getattr(param, "secondary_opts", []):
            record = param.get_help_record(ctx)
            return " ".join((record[1] if record else "").split())
    raise AssertionError(f"no option {flag}")


def flags_of(command: Any) -> list[str]:
    return [f for p in command.params if p.param_type_name == "option" for f in [*p.opts, *p.secondary_opts]]


def test_the_commands_were_found():
    assert {"sweep", "ab", "gate", "tune", "causal", "watch", "baseline save"} <= set(COMMANDS), sorted(COMMANDS)


# ------------------------------------------------------------------ exit codes
def exit_table() -> dict[str, dict[int, str]]:
    page = (GUIDE / "commands.md").read_text()
    section = page[page.index("## Exit codes") :]
    lines = [line for line in section.splitlines() if line.startswith("| `")]
    header = next(line for line in section.splitlines() if line.startswith("| command |"))
    codes = [int(c) for c in re.findall(r"\|\s*(\d+)\s*(?=\|)", header)]
    table = {}
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        table[cells[0].strip("`")] = {code: text for code, text in zip(codes, cells[1:], strict=True) if text}
    return table


def test_the_exit_code_table_is_what_each_commands_help_says():
    table = exit_table()
    assert set(table) == set(COMMANDS), (
        f"docs/guide/commands.md's exit-code table has rows for {sorted(set(table) - set(COMMANDS))} that are no "
        f"command, and none for {sorted(set(COMMANDS) - set(table))}: one row per command"
    )
    problems = []
    for name in COMMANDS:
        said = epilog_codes(name)
        for code in SHARED_EXITS:
            if code not in said:
                problems.append(f"`harness {name} --help`: no exit {code} (every command has it)")
        for code in sorted({*said, *table[name]} - {74, 130}):
            expected = said.get(code)
            if code == 2 and expected == SHARED_EXITS[2]:
                expected = "bad input"
            if table[name].get(code) != expected:
                problems.append(
                    f"docs/guide/commands.md, exit codes, row `{name}`, column {code}: the table says "
                    f"{table[name].get(code)!r}, `harness {name} --help` says {expected!r}"
                )
    assert not problems, "\n".join(problems)


def test_the_exit_code_check_fails_on_a_code_the_docs_do_not_have():
    table = exit_table()
    assert table["gate"].get(3) and table["ab"].get(3) and table["compare"].get(3), "3: undecided"
    assert epilog_codes("gate")[3] == table["gate"][3]
    table["gate"].pop(3)
    assert epilog_codes("gate").get(3) != table["gate"].get(3)


# ------------------------------------------------------------------ defaults
POINTER = re.compile(r"default\b[^;)]*?(\bsee\b|docs/|\.md\b|the docs|the benchmarks)", re.IGNORECASE)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_default_the_help_gives_is_a_value(name):
    command = COMMANDS[name]
    problems = []
    for param in command.params:
        if param.param_type_name != "option" or param.hidden:
            continue
        flag = param.opts[0]
        text = option_help(command, flag)
        if POINTER.search(text):
            problems.append(f"{flag}: {text!r} points elsewhere for its default: say the value")
        shown = param.default not in (None, False, (), []) and param.show_default is not False
        if shown and "[default:" not in text:
            problems.append(f"{flag}: its default {param.default!r} is not shown")
    assert not problems, f"`harness {name} --help`: " + "; ".join(problems)


def code_defaults() -> dict[tuple[str, str], str]:
    """(command, flag) -> what its help must say, from the constants the code uses when the
    flag is not given (a default held in code, not in the option's declaration)."""
    from harness.ab.experiment import DEFAULT_BUDGET_S
    from harness.ab.sequential import DEFAULT_TOLERANCE, blocks_to_decide
    from harness.ab.slicing import SliceOptions
    from harness.analysis.gating import DEFAULT_TOLERANCE as GATE_TOLERANCE
    from harness.cell.targets import DEFAULT_CAP_S, DEFAULT_EVERY_S
    from harness.running.cell_log import DEFAULT_CAP_MB
    from harness.running.executors.ray import DEFAULT_ATTEMPTS, DEFAULT_GRACE_S
    from harness.running.matrix import DEFAULT_DEADLINE_SLACK_S, DEFAULT_DURATION_S, DEFAULT_STEADY_MAX_S

    def pct(x: float) -> str:
        return f"{100 * x:g}%"

    slicing = SliceOptions()
    found = {
        ("ab", "--tolerance"): f"default {pct(DEFAULT_TOLERANCE)}",
        ("compare", "--tolerance"): f"default {pct(DEFAULT_TOLERANCE)}",
        ("gate", "--tolerance"): f"default {pct(GATE_TOLERANCE)}; with --against, {pct(DEFAULT_TOLERANCE)}",
    }
    for name in ("ab", "gate"):
        found |= {
            (name, "--budget"): f"default {DEFAULT_BUDGET_S:g}",
            (name, "--slice"): f"default {slicing.slice_s:g}",
            (name, "--warmup-pairs"): f"default {slicing.warmup_pairs}",
            (name, "--min-blocks"): f"{blocks_to_decide(0.05)} at 95 %",
        }
    found[("ab", "--settle")] = f"default {slicing.settle_s:g}"
    for name in ("run", "sweep", "profile"):
        found[(name, "--duration")] = (
            f"default {DEFAULT_DURATION_S:g}; with --target: the cap, default {DEFAULT_CAP_S:g}"
        )
        found[(name, "--timeout")] = f"--steady-max, {DEFAULT_STEADY_MAX_S:g} s) + {DEFAULT_DEADLINE_SLACK_S:g}"
    for name in ("run", "sweep"):
        found[(name, "--steady-max")] = f"default {DEFAULT_STEADY_MAX_S:g} s"
        found[(name, "--target-every")] = f"default {DEFAULT_EVERY_S:g}"
        found[(name, "--log-cap-mb")] = f"default {DEFAULT_CAP_MB:g}"
    found[("watch", "--log-cap-mb")] = f"default {DEFAULT_CAP_MB:g}"
    found[("tune", "--target-every")] = f"default {DEFAULT_EVERY_S:g}"
    found[("sweep", "--node-attempts")] = f"[default: {DEFAULT_ATTEMPTS};"
    found[("sweep", "--node-grace")] = f"[default: {DEFAULT_GRACE_S};"
    return found


def test_the_defaults_the_help_states_in_words_are_the_codes():
    problems = []
    for (name, flag), expected in code_defaults().items():
        text = option_help(COMMANDS[name], flag)
        if expected not in text:
            problems.append(f"`harness {name} {flag}`: the code's default is {expected!r}; the help says {text!r}")
    assert not problems, "\n".join(problems)


def help_default(command: Any, flag: str) -> str | None:
    """The default `--help` gives for a flag: click's `[default: X]`, else the first value after
    the word default in its help (None when it gives none as a number)."""
    text = option_help(command, flag)
    shown = re.search(r"\[default: ([^\];]+)", text)  # click adds a range after ";"
    if shown:
        return shown.group(1)
    said = re.search(r"\bdefault:? (\d[\d.]*\s?%?)", text)
    return said.group(1) if said else None


def same_value(a: str, b: str) -> bool:
    def norm(v: str) -> str:
        v = v.replace(" ", "").strip("`*")
        try:
            return f"{float(v.rstrip('%')):g}" + ("%" if v.endswith("%") else "")
        except ValueError:
            return v

    return norm(a) == norm(b)


def sections(page: Path) -> list[str]:
    """A page's sections: from one heading to the next (code blocks are not split)."""
    text, parts, current, fenced = page.read_text(), [], [], False
    for line in text.splitlines():
        if re.match(r"^\s*(```|~~~)", line):
            fenced = not fenced
        if not fenced and re.match(r"^#{1,6} ", line) and current:
            parts.append("\n".join(current))
            current = []
        current.append(line)
    parts.append("\n".join(current))
    return parts


def names(section: str) -> set[str]:
    """The commands a section names (`harness gate`, `harness baseline save`)."""
    return {name for name in COMMANDS if re.search(rf"\bharness {re.escape(name)}(?![\w-])", section)}


def test_a_default_a_guide_table_gives_is_the_one_the_help_gives():
    problems = []
    for page in sorted(GUIDE.glob("*.md")):
        for section in sections(page):
            commands = names(section)
            for line in section.splitlines():
                cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("| `--") else []
                if len(cells) < 3:
                    continue
                flag = re.match(r"`(--[a-z][a-z0-9-]*)", cells[0])
                given = re.fullmatch(r"`?\d[\d.]*\s?%?`?", cells[-1])
                if not (flag and given):
                    continue
                helps = {
                    help_default(COMMANDS[c], flag.group(1)) for c in commands if flag.group(1) in flags_of(COMMANDS[c])
                }
                helps.discard(None)
                if helps and not any(same_value(cells[-1], h) for h in helps):
                    problems.append(f"{page.name}: {flag.group(1)} default {cells[-1]}, --help says {sorted(helps)}")
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------ every flag in the guide
def test_every_flag_of_every_command_is_named_where_the_guide_speaks_of_that_command():
    pages = sorted(GUIDE.glob("*.md"))
    about: dict[str, list[str]] = {name: [] for name in COMMANDS}
    mentions: dict[str, dict[str, int]] = {name: {} for name in COMMANDS}
    for page in pages:
        for section in sections(page):
            for name in names(section):
                about[name].append(section)
        text = page.read_text()
        for name in COMMANDS:
            mentions[name][page.name] = len(re.findall(rf"\bharness {re.escape(name)}(?![\w-])", text))
    problems = []
    for name, command in sorted(COMMANDS.items()):
        home = max(mentions[name], key=lambda p: mentions[name][p])
        for flag in flags_of(command):
            if flag == "--help":
                continue
            if not any(re.search(rf"{re.escape(flag)}(?![\w-])", s) for s in about[name]):
                problems.append(
                    f"`harness {name} {flag}` is in the CLI reference but in no guide section that names "
                    f"`harness {name}`: say what it is for in docs/guide/{home} (e.g. the options table of "
                    f"`harness {name}`)"
                )
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------ the shape of the site
@pytest.mark.parametrize("page", sorted(GUIDE.glob("*.md")), ids=lambda p: p.name)
def test_a_guide_page_is_short_or_says_why_at_its_top(page):
    lines = page.read_text().splitlines()
    if len(lines) > LONG_PAGE:
        top = "\n".join(lines[1:4])
        assert "*Long page:" in top, (
            f"{page.name}: {len(lines)} lines; keep a guide page under {LONG_PAGE} (what to type, what it prints, "
            "how to read it; the reasoning to docs/explain/ or the records) or say why at its top: '*Long page: ...*'"
        )


def test_the_records_are_one_navigation_entry_and_their_index_reaches_each():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python", "#"))

    def leaves(node: Any) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, dict):
            return [x for v in node.values() for x in leaves(v)]
        return [x for v in node for x in leaves(v)]

    nav = leaves(config["nav"])
    in_nav = [p for p in nav if p.startswith(("records/", "gpu-results/"))]
    assert in_nav == ["records/index.md"], in_nav
    index = (ROOT / "docs" / "records" / "index.md").read_text()
    notes = [p for p in RECORDS if p.name != "index.md"] + sorted((ROOT / "docs" / "gpu-results").glob("*.md"))
    unreached = [p.name for p in notes if p.name not in index]
    assert not unreached, f"docs/records/index.md links none of {unreached}"
