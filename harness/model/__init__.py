"""The data model and the suite contract: what a suite and the harness agree on.

The lowest layer: the vocabulary of a suite's numbers (vocabulary.py), the Suite object and
its resources (suite.py), backend registries (choices.py), suites found by entry point
(registry.py), user values validated against a suite's Params (params.py), how work is split
between workers (workshare.py), and the plain statistics and number formatting everyone
above uses (stats.py, numbers.py). Nothing here runs a cell or reads a run directory.
"""
