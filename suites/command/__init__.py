"""Any program as a cell: its JSON-lines output on stdout becomes probe calls.

A team benchmarks its own trainer without Python glue: `argv` is formatted with the
cell's params (`{workers}`), and each line the program prints such as
`{"count": {"games": 3}}`, `{"observe": {"batch": 57}}`, `{"set": {"loss": 0.1}}`,
`{"work": {"requested": 10, "done": 10}}` or `{"phase": "measure"}` is applied to the
probe; other lines are kept in the cell's log. The suite sets `watch=True`: the program
is the user's own and reports nothing else, so the harness watches it from outside as
`harness watch` does (where its time goes, its pipes, its torch calls, the rates it logs).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from harness.probe import Probe, Resources, Suite, resolve_workers


class Params(BaseModel):
    # Extra keys are allowed on purpose: they are the placeholders the user's argv names.
    model_config = ConfigDict(extra="allow")

    argv: str = Field("", description="program and arguments (shell words); {key} takes a param's value")
    workers: int = Field(1, ge=0, description="passed to the program as {workers} (0 = one per core)")
    stop_grace_s: float = Field(
        5.0, gt=0, description="after the duration, SIGTERM then wait this long", json_schema_extra={"unit": "s"}
    )


def run(params: Params, probe: Probe) -> None:
    from suites.command.program import run_program

    run_program(params, probe)


SUITE = Suite(
    name="command",
    description='run any program; its JSON-lines stdout ({"count": {...}}, ...) becomes metrics',
    params=Params,
    run=run,
    resources=lambda p: Resources(cpus=resolve_workers(p.workers)),
    watch=True,
)
