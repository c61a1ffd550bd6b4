"""Reports of a run: one module per format (csv, terminal, ...)."""
