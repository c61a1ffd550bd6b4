"""Analysis of stored runs, returning data and printing nothing: two runs compared
(comparison.py), a run gated against a baseline (gating.py, baselines.py), a metric across
runs (trend.py) and its change points (changes.py), the Universal Scalability Law (usl.py)
fitted to a run's scaling groups (scaling.py)."""
