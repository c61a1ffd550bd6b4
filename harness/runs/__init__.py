"""A run's data: one Record per cell-repeat (record.py), the run directory that stores them
(store.py), records as pandas tables (results.py), and a cell-repeat's time series
(series.py)."""
