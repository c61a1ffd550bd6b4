"""`harness suites`: every suite with its parameters and whether it can run here (its
extra installed), then a summary line per suite, and those that failed to load."""

from __future__ import annotations

from harness.commands import options


@options.command(epilog=options.exit_codes({0: "the suites listed"}))
def suites() -> int:
    """List every suite with its parameters (type, allowed values, default, unit)."""
    from rich.markup import escape
    from rich.table import Table

    from harness.model.params import describe_params
    from harness.model.registry import discover, not_ready
    from harness.report.terminal import console_for_stdout

    suites, broken = discover()
    console = console_for_stdout()
    for name, suite in sorted(suites.items()):
        table = Table(title=escape(f"{name}: {suite.description}"), title_justify="left")
        for col in ("param", "allowed", "default", "unit", "description"):
            table.add_column(col)
        for row in describe_params(suite.params):
            # plain text: a description such as 'needs the [ray] extra' is not markup
            table.add_row(*(escape(row[key]) for key in ("name", "allowed", "default", "unit", "description")))
        console.print(table)
        words = suite.words
        rates = ", ".join(r.metric for r in words.rates) or "its first *_per_s metric"
        quality = ", ".join(f"{q.metric} ({q.better} is better)" for q in words.quality)
        console.print(f"  rates: {rates}" + (f"; quality: {quality}" if quality else ""), markup=False)
    console.print("[bold]ready to run here[/bold]")
    for name, suite in sorted(suites.items()):
        problem = not_ready(name, suite)
        state = "[green]ready[/green]" if problem is None else f"[yellow]not ready[/yellow]: {escape(problem)}"
        console.print(f"  {name}: {state}")
    for name, why in sorted(broken.items()):
        console.print(f"[red]{name}[/red]: could not be loaded: {escape(why)}", markup=True)
    return 0
