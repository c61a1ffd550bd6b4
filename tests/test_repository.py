"""The repository holds the project's files only: no virtualenv or installed packages are
tracked (one came in with a merge once: 756 files of pip and setuptools, its pyvenv.cfg
naming a machine's path), and .gitignore keeps a new one out wherever it is made."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# what marks a path as part of a virtualenv or an installed package tree
INSTALLED = re.compile(
    r"(^|/)(pyvenv\.cfg|site-packages/|dist-packages/|lib(64)?/python3[\d.]*/|bin/activate(\.\w+)?$|bin/pip3?[\d.]*$)"
)


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


needs_git = pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")


def test_the_pattern_knows_a_virtualenv():
    for path in ("x/pyvenv.cfg", "x/lib/python3.11/site-packages/pip/__init__.py", "x/bin/activate", "x/bin/pip3.11"):
        assert INSTALLED.search(path), path
    for path in ("harness/cli.py", "docs/guide/tune.md", "tests/programs/busy_poll.py", "benchmarks/data/x.json"):
        assert not INSTALLED.search(path), path


@needs_git
def test_no_virtualenv_or_installed_package_is_tracked():
    tracked = git("ls-files", "-z").split("\0")
    found = [p for p in tracked if INSTALLED.search(p)]
    folders = sorted({p.split("/")[0] for p in found})
    assert not found, (
        f"{len(found)} tracked file(s) of a virtualenv or installed packages, under {folders} "
        f"(e.g. {found[0]}): `git rm -r --cached` them; .gitignore should have kept them out"
    )


@needs_git
def test_gitignore_keeps_a_new_virtualenv_out_wherever_it_is_made():
    made = ["tunereal-sf/pyvenv.cfg", "tunereal-sf/lib/python3.11/site-packages/pip/__init__.py",
            "tunereal-sf/bin/activate", "tunereal-sf/bin/pip", "tunereal-sf/bin/python3", ".venv/bin/python",
            "venv/lib/python3.12/site-packages/x.py",
            # a program's TensorBoard logs, written where a tune ran it (192 files of CleanRL's came in once)
            "runs/CartPole-v1__ppo__1__1795956671/events.out.tfevents.1795956671.vm.1.0"]  # fmt: skip
    out = subprocess.run(["git", "check-ignore", "--no-index", *made], cwd=ROOT, capture_output=True, text=True)
    ignored = set(out.stdout.split())
    assert ignored == set(made), f".gitignore lets these in: {sorted(set(made) - ignored)}"
    tracked_and_ignored = git("ls-files", "-ci", "--exclude-standard").split()
    assert not tracked_and_ignored, f".gitignore's patterns match tracked files: {tracked_and_ignored[:5]}"
