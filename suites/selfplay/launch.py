"""Starting worker processes cheaply: which start method, and a light main module.

spawn and forkserver children re-import the parent's `__main__` before they run their
target (to find functions defined there). When that main module imports torch, every
server worker pays for torch after all: hundreds of MB each, and seconds of CPU each on
busy cores. Our targets live in importable modules, so nothing from `__main__` is needed:
`light_main()` hides the real main module while processes are being started, and the
children import only what their target needs.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def light_main() -> Iterator[None]:
    """While active, processes started with spawn or forkserver do not re-import `__main__`."""
    real = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")  # no __file__, no __spec__
    try:
        yield
    finally:
        if real is not None:
            sys.modules["__main__"] = real


def stop_forkserver() -> None:
    """Stop this process's forkserver, so that no helper process outlives the suite's run
    (the next forkserver Process starts a fresh one). `_stop` is what CPython's own tests
    use; if a future Python drops it, the forkserver simply lives until this process exits."""
    from multiprocessing import forkserver

    stop = getattr(getattr(forkserver, "_forkserver", None), "_stop", None)
    if stop is not None:
        stop()
