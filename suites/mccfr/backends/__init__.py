"""Where the iterations run: one module per backend, behind the protocol in base.py.

Importing this package is cheap (no numpy, numba or ray): backends are registered by
name and imported when a run picks one. Adding a backend is a module and a line here.
"""

from __future__ import annotations

from harness.probe import Choices

BACKENDS = Choices("backend")
BACKENDS.add("sequential", "suites.mccfr.backends.sequential:SequentialBackend")
BACKENDS.add("threads", "suites.mccfr.backends.threads:ThreadsBackend")
BACKENDS.add("processes", "suites.mccfr.backends.processes:ProcessesBackend")
BACKENDS.add("ray", "suites.mccfr.backends.ray:RayBackend")  # Ray is an optional extra

__all__ = ["BACKENDS"]
