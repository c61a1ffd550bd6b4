"""Your program on the command line (`-- CMD ...` of sweep and ab) as the harness's own
`command` suite's params: the program, its --progress patterns and --progress-file globs."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from harness.errors import UserError
from harness.program import COMMAND_PARAM, NAME


@dataclass(frozen=True)
class Program:
    argv: list[str]
    progress: tuple[str, ...] = ()
    progress_files: tuple[str, ...] = ()

    @classmethod
    def from_cli(cls, argv: list[str] | None, progress: list[str] | None, files: list[str] | None) -> Program | None:
        if not argv:
            if progress or files:
                raise UserError("--progress and --progress-file read your program's output: give it after --, e.g. "
                                "harness sweep --workers 1,4 --progress-file 'runs/**' -- python train.py")  # fmt: skip
            if argv is not None:
                raise UserError("nothing after --: give your program, e.g. -- python train.py --workers {workers}")
            return None
        return cls(list(argv), tuple(progress or ()), tuple(files or ()))

    @property
    def suite(self) -> str:
        return NAME

    def axes(self) -> dict[str, list[Any]]:
        """The suite's params: one value each (a regex may hold commas, so no axis)."""
        out: dict[str, list[Any]] = {COMMAND_PARAM: [shlex.join(self.argv)]}
        if self.progress:
            out["progress"] = ["\n".join(self.progress)]
        if self.progress_files:
            out["progress_files"] = ["\n".join(self.progress_files)]
        return out

    def check_suite(self, suite: str | None) -> None:
        if suite is not None and suite != NAME:
            raise UserError(f"--suite {suite} and a program after -- exclude each other: the program is the cell")
