"""How the actor and the learners run: one module per backend, behind the protocol in base.py.

Importing this package is cheap (no torch, no gymnasium): backends are registered by
name and imported when a run picks one. Adding a backend is a module and a line here.
"""

from __future__ import annotations

from harness.probe import Choices

BACKENDS = Choices("backend")
BACKENDS.add("sequential", "suites.actor_learner.backends.sequential:SequentialBackend")
BACKENDS.add("processes", "suites.actor_learner.backends.processes:ProcessesBackend")

__all__ = ["BACKENDS"]
