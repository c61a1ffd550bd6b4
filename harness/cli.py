"""The `harness` command line: the app and its commands, registered in the order `--help`
lists them. Each command declares its own options in harness.commands.<name> (the flags
several share, and the exit codes, in harness.commands.options).

Registering imports every command module, so they import their heavy dependencies inside
the command: `harness --help` stays quick.
"""

from __future__ import annotations

import typer

from harness.commands import (
    ab,
    baseline,
    causal,
    compare,
    diagnose,
    doctor,
    export,
    gate,
    history,
    limits,
    profile,
    report,
    run,
    suites,
    sweep,
    tune,
    watch,
)

app = typer.Typer(
    help="Benchmark and profile parallel game solvers and self-play training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

COMMANDS = (
    suites.suites,
    run.run,
    sweep.sweep,
    report.report,
    compare.compare,
    diagnose.diagnose,
    profile.profile,
    gate.gate,
    ab.ab,
    history.history,
    export.export,
    doctor.doctor,
    limits.limits,
    watch.watch,
    causal.causal,
    tune.tune,
)
for declared in COMMANDS:
    app.command(**declared.settings)(declared)  # settings: harness.commands.options.command
app.add_typer(baseline.app, name="baseline")


def _version(value: bool) -> None:
    if value:
        from harness import __version__

        print(f"harness {__version__}")
        raise typer.Exit(0)


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="print the harness's version and exit"
    ),
) -> None:
    """Benchmark and profile parallel game solvers and self-play training."""


if __name__ == "__main__":
    app()
