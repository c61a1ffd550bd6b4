"""Every `harness ...` command the README and the guide show goes through the CLI's own
argument parser, so a renamed or removed flag fails CI instead of a reader.

What is checked, and how (no command does any work):

- Pages: README.md and every docs/**/*.md, except docs/records/ (dated lab notes, kept as
  they were written: a command there is history, not advice).
- Commands in code blocks are meant to be copied. A line (after a `$ ` prompt, or after
  `&&`, `;`, `||` or `|` on the line) that starts with `harness ` is split like a shell
  would (comments dropped, `$(...)` kept as one word) and parsed in full: the command path
  is resolved through the Typer app's click groups and `make_context()` parses the rest,
  with every type conversion, missing argument and unknown option, without invoking the
  command (eager `--version`/`--help` exit early, which counts as parsed).
- A code-block line that is a synopsis (it holds `[...]`, `...`, an `a|b` choice, or an
  ALL-CAPS placeholder such as RUN_DIR, SPEC.toml or `--duration S`) and every inline code
  span starting with `harness ` (prose names a command and some of its flags, often
  without their required arguments) get the name check only: the command path exists, and
  every `--flag` written before a bare `--` is an option of that command.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer

from harness.cli import app

try:  # typer >= 0.2x carries its own copy of click; older ones use click itself
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover - the older typers pyproject allows
    from click.exceptions import UsageError

ROOT = Path(__file__).resolve().parent.parent
SKIPPED_DIRS = ("records",)
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(\.[a-z]+)?$")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE = re.compile(r"(?<!`)`(harness\s[^`]+)`(?!`)")
SUBSTITUTION = re.compile(r"\$\([^)]*\)")
SHELL_SPLIT = re.compile(r"\s(?:&&|\|\||;|\|)\s")


def pages() -> list[Path]:
    docs = [p for p in sorted((ROOT / "docs").rglob("*.md")) if not set(SKIPPED_DIRS) & set(p.parts)]
    return [ROOT / "README.md", *docs]


def shown_commands(text: str) -> list[tuple[int, str, bool]]:
    """(line number, command, from a code block) for every `harness ...` a page shows. An
    inline span may wrap onto the next line of its paragraph; its line is where it starts."""
    found: list[tuple[int, str, bool]] = []
    prose: list[str] = []  # the page with its code blocks blanked, for the inline spans
    in_block = False
    lines = list(enumerate(text.splitlines(), 1))
    while lines:
        number, line = lines.pop(0)
        if FENCE.match(line):
            in_block = not in_block
            prose.append("")
            continue
        if not in_block:
            prose.append(line)
            continue
        prose.append("")
        while line.endswith("\\") and lines:  # a shell line continued on the next
            line = line[:-1] + " " + lines.pop(0)[1].strip()
            prose.append("")
        body = SUBSTITUTION.sub("SUBSTITUTED", re.sub(r"^\s*\$\s+", "", line))
        for piece in SHELL_SPLIT.split(f" {body} "):
            piece = piece.strip()
            if piece.startswith("harness "):
                found.append((number, piece, True))
    joined = "\n".join(prose)
    for match in INLINE.finditer(joined):
        span = " ".join(match.group(1).replace("\\|", "|").split())
        found.append((joined.count("\n", 0, match.start()) + 1, span, False))
    return sorted(found)


def words(command: str) -> list[str]:
    """The command's words after `harness`, as a shell splits them; `$(...)` stays one word."""
    command = SUBSTITUTION.sub("SUBSTITUTED", command)
    return shlex.split(command, comments=True)[1:]


def is_synopsis(command: str, argv: list[str]) -> bool:
    if re.search(r"\[|\.\.\.|\w\|\w", command.split(" -- ")[0]):
        return True
    return any(PLACEHOLDER.match(word) for word in argv if word != "SUBSTITUTED")


def resolve(argv: list[str]) -> tuple[Any, list[str], list[str]]:
    """(the click command the words name, its path, the words left for it). Duck-typed (a
    group has `commands`), as typer's click is not always the `click` package."""
    command = typer.main.get_command(app)
    path: list[str] = []
    while hasattr(command, "commands") and argv and argv[0] in command.commands:
        path.append(argv[0])
        command, argv = command.commands[argv[0]], argv[1:]
    return command, path, argv


def option_names(command: Any) -> set[str]:
    names = {"--help"}
    for param in command.params:
        if param.param_type_name == "option":
            names |= {*param.opts, *param.secondary_opts}
    return names


def check_names(argv: list[str]) -> list[str]:
    """Problems of a synopsis or a fragment: unknown command path or flags."""
    command, path, rest = resolve([w.strip("[]") for w in argv])
    allowed = option_names(command)
    problems = []
    for word in rest:
        if word == "--":
            break
        for part in re.split(r"[|/]", word):
            flag = part.strip("[]").split("=")[0]
            if flag.startswith("--") and flag not in allowed:
                problems.append(f"`harness {' '.join(path)}` has no option {flag}")
    if hasattr(command, "commands"):
        if rest and not rest[0].startswith("-"):
            problems.append(f"`harness {' '.join(path)}` has no command {rest[0]}")
        elif not path and not any(w.startswith("--") for w in rest):
            problems.append("names no command")
    return problems


def check_parse(argv: list[str]) -> list[str]:
    """Problems of a command meant to be copied: the parser's own errors."""
    group = typer.main.get_command(app)
    try:
        with group.make_context("harness", list(argv), resilient_parsing=False) as ctx:
            command, path, rest = resolve(argv)
            if command is group:
                return []  # `harness --version` and the like: the group's own options
            command.make_context(" ".join(["harness", *path]), rest, parent=ctx, resilient_parsing=False)
    except (typer.Exit, SystemExit):
        return []  # an eager option (--version, --help) parsed and asked to stop
    except UsageError as exc:
        return [exc.format_message()]
    return []


def problems_of(command: str, from_block: bool) -> list[str]:
    try:
        argv = words(command)
    except ValueError as exc:  # an unclosed quote: no shell would run it either
        return [f"not a shell command line: {exc}"]
    if not argv:
        return ["no command after `harness`"]
    if from_block and not is_synopsis(command, argv):
        return check_parse(argv)
    return check_names(argv)


def all_problems() -> list[str]:
    found = []
    for page in pages():
        for number, command, from_block in shown_commands(page.read_text()):
            found += [f"{page.relative_to(ROOT)}:{number}: {command!r}: {p}" for p in problems_of(command, from_block)]
    return found


@pytest.mark.slow
def test_every_harness_command_in_the_readme_and_the_guide_parses():
    count = sum(len(shown_commands(p.read_text())) for p in pages())
    assert count > 30, f"only {count} commands found: is the extraction broken?"
    problems = all_problems()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("command", "from_block"),
    [
        ("harness limits [--device cpu|cuda] [--blocks B --channels C] [--threads 1]", True),
        ("harness limits --device cpu --threads 1", False),
        ("harness limits --blocks 6", True),
        ("harness sweep configs/quick.toml --repeat 3", True),
        ("harness run synthetic --duration soon", True),
        ("harness baseline keep RUN_DIR", True),
        ("harness frobnicate", False),
    ],
)
def test_the_check_fails_on_flags_and_commands_that_do_not_exist(command, from_block):
    assert problems_of(command, from_block), command


@pytest.mark.parametrize(
    ("command", "from_block"),
    [
        ("harness --version", True),
        ("harness limits --set blocks=6 --set channels=64 --sizes 1,8,64", True),
        ("harness watch --duration 60 -- python train.py --workers 8", True),
        ('harness gate "$(ls -td ci-results/*/ | head -n 1)" --baseline quick --tolerance 5%', True),
        ("harness baseline save RUN_DIR --name NAME", True),
        ("harness compare --fail-on regression", False),
        ("harness watch --torch-hook/--no-torch-hook", False),
    ],
)
def test_the_check_passes_commands_synopses_and_fragments_that_hold(command, from_block):
    assert problems_of(command, from_block) == [], command


def test_the_extraction_finds_block_lines_after_a_prompt_or_and_and_inline_spans():
    text = "\n".join(
        [
            "Run `harness suites` or `harness.probe` (a module), or `harness limits",
            "--fast`.",
            "```bash",
            "pip install -e . && harness sweep configs/quick.toml   # the quick sweep",
            "$ harness watch -- python x.py",
            "harness run synthetic \\",
            "    --duration 2",
            "```",
        ]
    )
    assert shown_commands(text) == [
        (1, "harness limits --fast", False),
        (1, "harness suites", False),
        (4, "harness sweep configs/quick.toml   # the quick sweep", True),
        (5, "harness watch -- python x.py", True),
        (6, "harness run synthetic  --duration 2", True),
    ]
