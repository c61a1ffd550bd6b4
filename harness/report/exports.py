"""Export formats for other tools, by name: `harness export RUN_DIR --NAME OUT`.

Each entry is "module:function" with the signature `(run_dir, out, metrics) -> (count,
skipped)`: how many benchmarks or metrics it wrote and which it left out. Adding a format
is one module and one line here, plus its flag in cli.py (docs/architecture.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

Exporter = Callable[[Path, Path, list[str] | None], tuple[int, list[str]]]

EXPORTS: dict[str, str] = {
    "pyperf": "harness.report.pyperf:export",
}


def exporter(name: str) -> Exporter:
    module, _, function = EXPORTS[name].partition(":")
    return getattr(importlib.import_module(module), function)
