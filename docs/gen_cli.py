"""The CLI reference page, generated from the Typer app at every site build (an MkDocs hook,
`hooks:` in mkdocs.yml), so the flags the site lists are the flags the code parses.

It walks `typer.main.get_command(harness.cli.app)`: every command and sub-command, its
usage line, its help, its exit codes (the help's epilog), and each argument and option as
the `--help` screen gives it (names, type, help, default). The same hook puts CHANGELOG.md (at the repository root, outside
docs/) into the site as changelog.md. `python docs/gen_cli.py` prints the page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_PAGE = "reference/cli.md"
CHANGELOG_PAGE = "changelog.md"
DEFAULT = re.compile(r"\s*\[default: (.*?)\]\s*$")


def _cell(text: str) -> str:
    """One table cell: pipes escaped, on one line."""
    return " ".join(text.replace("|", "\\|").split())


def commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """(path, click command) for the group and every command under it, in the order of the
    app (groups before their sub-commands). Duck-typed: typer's click is not always `click`."""
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            found += commands(sub, (*path, name))
    return found


def parameter_rows(command: Any, ctx: Any) -> list[tuple[str, str, str, str]]:
    """(kind, names and type, help, default) for each parameter and --help, as --help shows them."""
    rows = []
    for param in [*command.params, command.get_help_option(ctx)]:
        if param is None or getattr(param, "hidden", False):
            continue
        record = param.get_help_record(ctx)
        names, help_text = record if record else (param.name or "", "")
        default = DEFAULT.search(help_text or "")
        help_text = DEFAULT.sub("", help_text or "")
        rows.append((param.param_type_name, names, help_text, default.group(1) if default else ""))
    return rows


def section(path: tuple[str, ...], command: Any, parent: Any = None) -> tuple[str, Any]:
    """One command's part of the page, and its context (the parent of its sub-commands')."""
    name = " ".join(("harness", *path))
    ctx = command.context_class(command, info_name=path[-1] if path else "harness", parent=parent)
    usage = " ".join([name, *command.collect_usage_pieces(ctx)])
    lines = [f"{'#' * (2 + max(0, len(path) - 1))} `{name}`", "", f"```text\n{usage}\n```", ""]
    if command.help:
        lines += [command.help.strip(), ""]
    if command.epilog:  # its exit codes (harness.commands.options.exit_codes)
        lines += [command.epilog.strip(), ""]
    subs = [(n, c) for n, c in getattr(command, "commands", {}).items() if not c.hidden]
    if subs:
        lines += ["| command | what it does |", "| --- | --- |"]
        lines += [
            f"| `{name} {n}` | {_cell((c.help or '').strip().splitlines()[0] if c.help else '')} |" for n, c in subs
        ]
        lines.append("")
    rows = parameter_rows(command, ctx)
    if rows:
        lines += ["| argument or option | help | default |", "| --- | --- | --- |"]
        lines += [f"| `{_cell(names)}` | {_cell(text)} | {_cell(default)} |" for _, names, text, default in rows]
        lines.append("")
    return "\n".join(lines), ctx


def cli_markdown() -> str:
    """The whole reference page."""
    import typer

    from harness.cli import app

    root = typer.main.get_command(app)
    parts = [
        "# CLI reference",
        "",
        "Generated from the code (`docs/gen_cli.py`, run at every site build): every command of",
        "`harness` with every argument and option, its help and its default, as `--help` gives",
        "them. A default left empty means the option is unset unless given (its help says what",
        "happens then).",
        "",
    ]
    contexts: dict[tuple[str, ...], Any] = {}
    for path, command in commands(root):
        text, contexts[path] = section(path, command, contexts.get(path[:-1]))
        parts.append(text)
    return "\n".join(parts)


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated reference and the changelog to the site's files."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, REFERENCE_PAGE, content=cli_markdown()))
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    files.append(File.generated(config, CHANGELOG_PAGE, content=changelog))
    return files


if __name__ == "__main__":
    print(cli_markdown())
