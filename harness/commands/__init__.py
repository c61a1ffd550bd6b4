"""One module per `harness` command: its Typer function declares the command's arguments and
options (the shared ones from harness.commands.options) and returns the exit code; cli.py
only registers them.

Commands compose the layers below (running, analysis, report); the analysis they call
returns data and never prints. Every command module is imported when the CLI starts, so a
command imports what it runs on inside its function.
"""
