"""`harness --version`, pyproject.toml's version and CHANGELOG.md's newest numbered heading are
one number: raising the version without a changelog entry (or the reverse) fails."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parent.parent
HEADING = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.MULTILINE)


def test_the_version_is_the_newest_changelog_heading(cli):
    changelog = (ROOT / "CHANGELOG.md").read_text()
    versions = HEADING.findall(changelog)
    assert versions, "CHANGELOG.md has no '## [X.Y.Z] - YYYY-MM-DD' heading"
    newest = versions[0][0]
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    printed = cli("--version").output.split()
    assert declared == newest == harness.__version__, (declared, newest, harness.__version__)
    assert printed == ["harness", newest], printed


def test_the_changelog_is_newest_first_with_unreleased_on_top():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## (.+)$", changelog, re.MULTILINE)
    released = [h for h in headings if h != "Unreleased"]
    assert headings.index("Unreleased") == 0 if "Unreleased" in headings else True
    numbers = [tuple(map(int, v.split("."))) for v, _ in HEADING.findall(changelog)]
    assert len(numbers) == len(released), f"a heading is neither Unreleased nor '[X.Y.Z] - date': {released}"
    assert numbers == sorted(numbers, reverse=True), numbers
