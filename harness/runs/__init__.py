"""A run's data: one Record per cell-repeat (record.py), the run directory that stores them
(store.py), and records as pandas tables (results.py)."""
