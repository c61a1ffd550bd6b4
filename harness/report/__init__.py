"""Reports of a run, one module per format: csv, terminal (rich), html (with figures.py),
markdown."""
