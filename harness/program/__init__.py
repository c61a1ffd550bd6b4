"""Any program as a cell: the harness's own suite `command`, for a user's trainer or solver.

`argv` is formatted with the cell's params (`{workers}`, and any `--set key=...` the argv
names), so a sweep varies the user's own flags. The program's progress is read from what
it already writes (harness.readers): its stdout and stderr lines (tables, progress bars,
`Iteration 4500 (33.4 iter/s)`, `key=value`, JSON lines, the user's `--progress` regexes)
and the files named by `progress_files` (CSV, TensorBoard events). The harness's own JSON
lines (`{"count": {"games": 3}}`, `{"observe": ...}`, `{"set": ...}`, `{"work": ...}`,
`{"phase": "measure"}`) are applied to the probe as they are. The suite sets `watch=True`:
the harness watches the program from outside as `harness watch` does.

This suite is part of the harness (the CLI's `-- CMD` and a spec's `command = "..."` are
cells of it), unlike the game suites under suites/, which the harness never names.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.probe import Probe, Resources, Suite, Vocabulary, resolve_workers

NAME = "command"
COMMAND_PARAM = "argv"


class Params(BaseModel):
    # Extra keys are allowed on purpose: they are the placeholders the user's argv names.
    model_config = ConfigDict(extra="allow")

    argv: str = Field("", description="program and arguments (shell words); {key} takes a param's value")
    workers: int = Field(1, ge=0, description="passed to the program as {workers} (0 = one per core)")
    stop_grace_s: float = Field(
        5.0, gt=0, description="after the duration, SIGTERM then wait this long", json_schema_extra={"unit": "s"}
    )
    progress: str = Field(
        "",
        description="progress the built-in readers miss: regexes with named groups, one a line, "
        "'[NAME=]REGEX' (NAME= declares a counter)",
    )
    progress_files: str = Field(
        "",
        description="files the program writes progress to, one glob a line, relative to its working "
        "directory: *.csv, or TensorBoard event files / their directory",
    )

    @field_validator("progress")
    @classmethod
    def _patterns_compile(cls, value: str) -> str:
        from harness.readers import patterns

        patterns(value)  # ValueError names the bad pattern and the accepted form
        return value

    @field_validator("progress_files")
    @classmethod
    def _readable(cls, value: str) -> str:
        from pathlib import Path

        from harness.readers import file_readers

        file_readers(value, Path.cwd())  # ValueError: tensorboard is not installed
        return value


def run(params: Params, probe: Probe) -> None:
    from harness.program.launch import run_program

    run_program(params, probe)


SUITE = Suite(
    name=NAME,
    description="your own program; its progress is read from what it prints and writes (tables, bars, logs, CSV, TensorBoard)",
    params=Params,
    run=run,
    resources=lambda p: Resources(cpus=resolve_workers(p.workers)),
    watch=True,
    vocabulary=Vocabulary(open_quality=True),
)
