"""`harness limits`: what this machine can do at best, so reports can say how far a cell is.

Micro benchmarks run by pyperf in its own worker processes (`bench`): round trips through
multiprocessing Queue, Pipe and shared memory + Event (the harness's own), and every limit
benchmark a suite declares in its vocabulary (e.g. a net's forward pass per batch size ->
an evals/s curve). `measure` turns pyperf's JSON into a run directory like a sweep's (suite
"limits", one record per part); `efficiency` is what reports call: a cell's achieved rate
over the matching curve at the cell's size.
"""

from __future__ import annotations

SUITE = "limits"
IPC = "ipc"
TRANSPORTS = ("queue", "pipe", "shm")
