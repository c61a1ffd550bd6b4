"""Where the games and the net run: one module per backend, behind the protocol in base.py.

Importing this package is cheap (no torch, no ray): backends are registered by name and
imported when a run picks one. Adding a backend is a module and a line here.
"""

from __future__ import annotations

from harness.probe import Choices

BACKENDS = Choices("backend")
BACKENDS.add("sequential", "suites.selfplay.backends.sequential:SequentialBackend")
BACKENDS.add("threads", "suites.selfplay.backends.threads:ThreadsBackend")
BACKENDS.add("processes", "suites.selfplay.backends.processes:ProcessesBackend")
BACKENDS.add("server", "suites.selfplay.backends.server:ServerBackend")
BACKENDS.add("ray", "suites.selfplay.backends.ray:RayBackend")  # Ray is an optional extra

__all__ = ["BACKENDS"]
