"""The site's CLI reference (docs/gen_cli.py, generated at every build) lists every command
and every option that `harness --help` and each sub-command's `--help` show: the help
screens are read as a user sees them (wide terminal, so nothing wraps) and each name must
be in the reference's section for that command."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app

ROOT = Path(__file__).resolve().parent.parent
WIDE = {"COLUMNS": "240", "TERMINAL_WIDTH": "240", "NO_COLOR": "1"}
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def gen_cli():
    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REFERENCE = gen_cli().cli_markdown()


def help_screen(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    return result.output


def listed_commands(screen: str) -> list[str]:
    """The names in the help screen's Commands panel (or plain click's Commands: list)."""
    names, inside = [], False
    for line in screen.splitlines():
        text = line.strip("│ \t")
        if re.match(r"^(╭─ )?Commands", text):
            inside = True
            continue
        if inside and (text.startswith("╰") or not text):
            break
        first = re.match(r"^│? ?([a-z][\w-]*)\s", line)  # a wrapped description is indented
        if inside and first:
            names.append(first.group(1))
    return names


def command_paths() -> list[tuple[str, ...]]:
    """Every command path, found by walking the help screens from `harness --help`."""
    paths, todo = [], [()]
    while todo:
        path = todo.pop(0)
        paths.append(path)
        todo += [(*path, name) for name in listed_commands(help_screen(path))]
    return paths


def reference_section(path: tuple[str, ...]) -> str:
    """The reference's text for one command: from its heading to the next heading."""
    name = " ".join(("harness", *path))
    found = re.search(rf"^#+ `{re.escape(name)}`\n(.*?)(?=^#+ `|\Z)", REFERENCE, re.MULTILINE | re.DOTALL)
    assert found, f"the CLI reference has no section for `{name}`"
    return found.group(1)


PATHS = command_paths()


def test_the_help_screens_were_read():
    assert len(PATHS) >= 15 and ("baseline", "save") in PATHS and ("sweep",) in PATHS, PATHS


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "harness")
def test_the_reference_lists_every_option_and_command_the_help_shows(path):
    screen = help_screen(path)
    section = reference_section(path)
    flags = set(FLAG.findall(screen))
    assert "--help" in flags
    missing = sorted(f for f in flags if f not in section)
    assert not missing, f"`harness {' '.join(path)}`: --help shows {missing}, the reference does not"
    for name in listed_commands(screen):
        assert f"`{' '.join(('harness', *path, name))}`" in section, name


def test_the_reference_has_no_command_the_help_does_not_show():
    shown = {" ".join(("harness", *p)) for p in PATHS}
    in_reference = set(re.findall(r"^#+ `(harness[^`]*)`", REFERENCE, re.MULTILINE))
    assert in_reference == shown, in_reference ^ shown
