"""A/B of two revisions on one machine: time-sliced warm cells and a sequential test.

revisions.py checks a revision out into a temporary git worktree; slicing.py runs one cell
of each side, alternating them in slices; sequential.py decides from the slices' log-ratios;
experiment.py runs a cell's A/B until a decision or its budget (docs/architecture.md).
"""
