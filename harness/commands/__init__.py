"""One module per `harness` command: what it does, once cli.py has parsed its arguments.

Each module has a `main(...)` returning the exit code. Commands compose the layers below
(execute, analysis, report); the analysis they call returns data and never prints.
"""
