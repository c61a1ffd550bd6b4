"""A run's data: one Record per cell-repeat (record.py), the run directory that stores them
(store.py), records as pandas tables (results.py), and a cell-repeat's time series
(series.py)."""

from pathlib import Path

# Where run directories go unless --out says otherwise. Here, not in store.py, so that the
# CLI's option declarations (harness.commands.options) name it without importing a Record.
DEFAULT_RESULTS = Path("results")
