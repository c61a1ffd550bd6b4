"""Ctrl-C and SIGTERM during a sweep: remembered by the signal handler, acted on at safe points.

Why not let SIGINT raise KeyboardInterrupt where it lands (Python's default)? Because it
lands anywhere: inside a finaliser or a weakref callback, where Python prints "Exception
ignored" and drops it (the sweep then runs on and exits 0), or between `Popen()` starting a
cell and the runner noting it (the cell then outlives the sweep). So while `deferred()` is
active the handler only records the signal; the runner's wait loop, the executor between
cells and the sweep around its reports call `check()`, which raises KeyboardInterrupt in
ordinary code, where every cleanup path runs. A cell's wait polls at POLL_S, so a Ctrl-C
ends the running cell within a fraction of a second. A second Ctrl-C changes nothing (the
cleanup under way is what makes the run directory consistent); SIGKILL stays the hard stop,
and `--resume` repairs even that.

`close()` marks the point after which a signal comes too late to interrupt anything (the
run is recorded as finished), so the exit code and run.json always agree.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

POLL_S = 0.1
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _State:
    active = False
    closed = False
    signum: int | None = None


_state = _State()


def _handler(signum: int, frame: Any) -> None:
    if _state.closed:
        return
    if _state.signum is not None:
        os.write(2, b"still stopping: ending the running cell's processes (SIGKILL the sweep to abandon it)\n")
        return
    _state.signum = signum


@contextmanager
def deferred() -> Iterator[None]:
    """SIGINT and SIGTERM recorded instead of raised, for the duration of a sweep."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread; elsewhere the defaults stay
        return
    previous = {sig: signal.signal(sig, _handler) for sig in SIGNALS}
    _state.active, _state.closed, _state.signum = True, False, None
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _state.active, _state.closed, _state.signum = False, False, None


def pending() -> bool:
    """A signal arrived and has not been acted on yet."""
    return _state.signum is not None and not _state.closed


def check() -> None:
    """Raise KeyboardInterrupt here if a signal arrived: a safe point of the caller's."""
    if pending():
        raise KeyboardInterrupt


def close() -> None:
    """From here on signals are ignored; raises KeyboardInterrupt for one that came before."""
    check()
    _state.closed = _state.active
