"""Inside a cell: what runs in the child interpreter while a suite measures itself.

`python -m harness.cell SPEC OUT` (main.py) runs one cell; the probe (harness/probe.py, the
suites' API) is built from the measured window (window.py), the automatic warm-up
(steady.py), quality targets (targets.py) and weighted observations (observations.py);
processes.py marks, finds and ends the cell's process tree, and messages.py writes and reads
the JSON lines the cell sends its parent (the parent uses both too).
"""
