"""The two sides of an A/B: a revision checked out into a temporary git worktree, or the
working tree as it is (uncommitted changes included).

Each side's cells run with that side's code: the child is `python -m harness.cell` with
PYTHONPATH starting at the side's tree, so its probe, cell entry point and suites are the
side's own. What a tree does not hold (a temp repo with only a toy suite) comes from the
running harness, which follows on the path. The interpreter and installed packages are
the same for both sides: an A/B compares code, not environments.

The worktree lives under a temporary directory and is removed on every way out (return,
exception, Ctrl-C), then `git worktree prune` forgets it, so the repository's worktree
list is left as it was.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.cell.processes import PACKAGE_ROOT
from harness.errors import UserError

GIT_TIMEOUT_S = 120.0
WORKING_TREE = "working tree"


@dataclass(frozen=True)
class Side:
    """One side of an A/B: where its code is and which commit it is."""

    name: str  # "base" or "candidate"
    rev: str  # what the user asked for (a ref, a hash, or "working tree")
    commit: str | None
    root: Path
    dirty: bool = False

    def describe(self) -> str:
        short = (self.commit or "?")[:10]
        if self.rev == WORKING_TREE:
            return f"working tree at {short}" + (" + uncommitted changes" if self.dirty else "")
        return f"{self.rev} ({short})" if self.rev != self.commit else short

    def pythonpath(self, inherited: str | None = None) -> str:
        """The side's tree first, then what the caller had, then the running harness."""
        parts = [str(self.root), *(inherited or "").split(os.pathsep), PACKAGE_ROOT]
        return os.pathsep.join(dict.fromkeys(p for p in parts if p))


def git(args: list[str], cwd: Path) -> str:
    """Run git; a failure becomes a UserError carrying git's own message."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        raise UserError("git is not installed; an A/B of revisions needs git") from None
    except subprocess.TimeoutExpired:
        raise UserError(f"git {' '.join(args)} took more than {GIT_TIMEOUT_S:g} s in {cwd}") from None
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip().splitlines()
        raise UserError(f"git {' '.join(args)} failed in {cwd}: {message[-1] if message else done.returncode}")
    return done.stdout.strip()


def repo_root(start: Path) -> Path:
    """The top of the git repository holding `start`."""
    if not start.exists():
        raise UserError(f"{start} does not exist")
    try:
        return Path(git(["rev-parse", "--show-toplevel"], start))
    except UserError:
        raise UserError(
            f"{start.resolve()} is not inside a git repository; run harness ab/gate --against from your checkout"
        ) from None


def resolve(repo: Path, rev: str) -> str:
    """The full commit hash `rev` names, or a UserError saying it does not exist here
    (a shallow CI clone lacks old commits: fetch with depth 0)."""
    if not rev or rev.startswith("-"):
        raise UserError(f"revision {rev!r}: give a commit, branch or tag (e.g. HEAD~1, origin/main)")
    try:
        return git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], repo)
    except UserError:
        shallow = git(["rev-parse", "--is-shallow-repository"], repo) == "true"
        hint = "; this clone is shallow: fetch the history (git fetch --unshallow)" if shallow else ""
        raise UserError(f"revision {rev!r} is not a commit of the repository at {repo}{hint}") from None


def working_tree(repo: Path, name: str) -> Side:
    commit = git(["rev-parse", "HEAD"], repo)
    dirty = bool(git(["status", "--porcelain", "--untracked-files=no"], repo))
    return Side(name, WORKING_TREE, commit, repo, dirty)


@contextmanager
def checkout(repo: Path, rev: str, name: str, prefix: str | None = None, state: str | None = None) -> Iterator[Side]:
    """`rev` checked out (detached) into a temporary worktree for the duration; `prefix` of
    its directory (default harness-ab-NAME-), `state` a commit to check out instead (the
    working tree's, Side.rev staying what the user asked for)."""
    commit = resolve(repo, rev)
    scratch = Path(tempfile.mkdtemp(prefix=prefix or f"harness-ab-{name}-"))
    tree = scratch / "tree"
    try:
        git(["worktree", "add", "--detach", "--quiet", str(tree), state or commit], repo)
        yield Side(name, rev, commit, tree, dirty=state is not None and state != commit)
    finally:
        remove(repo, tree)
        shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def equal_sides(repo: Path, base_rev: str, cand_rev: str | None) -> Iterator[tuple[Side, Side]]:
    """(base, candidate) both in temporary worktrees whose paths have the same length (a
    counted run's instructions can follow a path's length: the strings a program builds from
    it, the environment's size, the alignment of copies). Without a candidate revision the
    working tree's state is checked out as a commit (`git stash create`: its changes to
    tracked files, the tree itself untouched)."""
    with checkout(repo, base_rev, "base", prefix="harness-count-b-") as base:
        if cand_rev is not None:
            with checkout(repo, cand_rev, "candidate", prefix="harness-count-c-") as cand:
                yield base, cand
            return
        state = git(["stash", "create"], repo) or None
        with checkout(repo, "HEAD", "candidate", prefix="harness-count-c-", state=state) as cand:
            yield base, Side("candidate", WORKING_TREE, cand.commit, cand.root, cand.dirty)


def remove(repo: Path, tree: Path) -> None:
    """Remove a worktree we added; never raises (it runs while unwinding from Ctrl-C)."""
    for args in (["worktree", "remove", "--force", str(tree)], ["worktree", "prune"]):
        try:
            subprocess.run(["git", *args], cwd=repo, capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError):
            pass


@contextmanager
def sides(repo: Path, base_rev: str, cand_rev: str | None) -> Iterator[tuple[Side, Side]]:
    """(base, candidate): the base always from a worktree, the candidate from one too when
    a revision is named, else the working tree itself."""
    with checkout(repo, base_rev, "base") as base:
        if cand_rev is None:
            yield base, working_tree(repo, "candidate")
            return
        with checkout(repo, cand_rev, "candidate") as cand:
            yield base, cand
