"""A program's output as the harness saw it, kept to be read again: each chunk of stdout and
stderr with its arrival time, and the lines those chunks become.

The readers are judged on real programs' output (the corpus under tests/corpus/): what a
progress bar redraws with `\\r`, a cursor-up escape between nested bars, a line still
without its newline when the next chunk comes, all at the times they arrived. `record`
starts a program as `harness.program.launch` does (both streams piped, no stdin, Python
unbuffered) and writes one JSON object a line:

    {"capture": 1, "argv": [...]}                      first: what ran
    {"t": 1.234, "s": "err", "d": "\\r 45%|###  | ..."}  a chunk: seconds since start, stream, text
    {"t": 40.1, "exit": -15}                           last: how it ended

`lines` reads a capture back into `(t, stream, line)`, split exactly as launch.py's text-mode
pipes split them (universal newlines: `\\r`, `\\n` and `\\r\\n` each end a line; a trailing
`\\r` waits for the next chunk), each stamped with the arrival of the chunk that ended it.
A capture ending `.gz` is gzipped.
"""

from __future__ import annotations

import codecs
import gzip
import heapq
import io
import json
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from harness.program.launch import child_env, signal_tree

FORMAT = 1
STREAMS = ("out", "err")


def _open(path: Path, mode: str) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, mode + "t", encoding="utf-8")  # type: ignore[return-value]
    return open(path, mode, encoding="utf-8")  # noqa: SIM115 - the caller closes it


def record(argv: list[str], path: Path, seconds: float, grace_s: float = 5.0, tee: bool = False) -> int | None:
    """Run `argv` for `seconds` (then SIGTERM to its tree, SIGKILL after `grace_s`), writing
    every chunk of its output to `path` as it arrives; `tee` passes each chunk on to our own
    stdout or stderr as well (to stand between a harness cell and the program, and keep the
    times its lines arrived). Returns its exit code (None: killed)."""
    import sys

    passed_on = {"out": sys.stdout.buffer, "err": sys.stderr.buffer}
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=child_env()
    )
    start = time.monotonic()
    selector = selectors.DefaultSelector()
    decoders = {}
    for name, stream in zip(STREAMS, (proc.stdout, proc.stderr), strict=True):
        assert stream is not None
        selector.register(stream, selectors.EVENT_READ, name)
        decoders[name] = codecs.getincrementaldecoder("utf-8")(errors="replace")
    stopped_at: float | None = None
    with _open(path, "w") as out:
        out.write(json.dumps({"capture": FORMAT, "argv": argv}) + "\n")
        try:
            while selector.get_map():
                now = time.monotonic() - start
                if stopped_at is None and now >= seconds:
                    signal_tree(proc.pid, signal.SIGTERM)
                    stopped_at = now
                elif stopped_at is not None and now - stopped_at > grace_s:
                    break
                for key, _ in selector.select(timeout=0.05):
                    data = os.read(key.fd, 65536)
                    if not data:
                        selector.unregister(key.fileobj)
                        continue
                    if tee:
                        passed_on[key.data].write(data)
                        passed_on[key.data].flush()
                    text = decoders[key.data].decode(data)
                    if text:
                        out.write(
                            json.dumps({"t": round(time.monotonic() - start, 4), "s": key.data, "d": text}) + "\n"
                        )
        finally:
            signal_tree(proc.pid, signal.SIGKILL)
            code = proc.wait()
            out.write(json.dumps({"t": round(time.monotonic() - start, 4), "exit": code}) + "\n")
    return code


def read(path: Path) -> tuple[dict[str, Any], list[tuple[float, str, str]]]:
    """The header and the chunks `(t, stream, text)` of a capture."""
    with _open(path, "r") as fh:
        objects = [json.loads(line) for line in fh if line.strip()]
    if not objects or objects[0].get("capture") != FORMAT:
        raise ValueError(f"{path} is not a capture (format {FORMAT}): its first line must be {{'capture': {FORMAT}}}")
    return objects[0], [(o["t"], o["s"], o["d"]) for o in objects[1:] if "d" in o]


class _Chunks(io.RawIOBase):
    """One stream's chunks, handed out one per read as a pipe would: `t` is the arrival
    time of the last chunk handed out."""

    def __init__(self, chunks: list[tuple[float, bytes]]) -> None:
        self._chunks = chunks
        self._next = 0
        self._rest = b""
        self.t = 0.0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._rest:
            if self._next == len(self._chunks):
                return 0
            self.t, self._rest = self._chunks[self._next]
            self._next += 1
        n = min(len(buffer), len(self._rest))
        buffer[:n] = self._rest[:n]
        self._rest = self._rest[n:]
        return n


def _stream_lines(chunks: list[tuple[float, bytes]], stream: str) -> Iterator[tuple[float, str, str]]:
    """One stream's lines as launch.py's pump reads them: through subprocess.Popen(text=True,
    errors="replace")'s reader, at most MAX_LINE at a time; the pieces of a longer line go to
    the cell's log unread, and are left out here too."""
    from harness.program.launch import MAX_LINE

    raw = _Chunks(chunks)
    text = io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors="replace")
    in_long_line = False
    while line := text.readline(MAX_LINE):
        ends = line.endswith("\n")
        if in_long_line or (not ends and len(line) >= MAX_LINE):
            in_long_line = not ends
            continue
        yield raw.t, stream, line


def lines(path: Path) -> Iterator[tuple[float, str, str]]:
    """The capture's lines `(t, stream, line)` in arrival order, each as launch.py reads it
    (ending in "\\n" unless it was the stream's last)."""
    _, chunks = read(path)
    per_stream = [
        _stream_lines([(t, d.encode("utf-8")) for t, s, d in chunks if s == stream], stream) for stream in STREAMS
    ]
    return heapq.merge(*per_stream, key=lambda item: item[0])


class ReplayClock:
    """The capture's time, for the probe and the feed of a replay: `t` seconds since start."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def replay(path: Path, probe: Any, feed: Any, clock: ReplayClock, tick_s: float = 0.1) -> float:
    """Feed a capture's lines to `probe` and `feed` (both made with `clock`) at their recorded
    times, as launch.py's loop would: each line handled, the probe asked `should_stop` after each
    and every `tick_s` of quiet between them (launch.py's queue timeout), until the probe's window
    closes or the capture ends. Calls `feed.finish()`; returns the time it stopped at."""
    from harness.program.launch import handle_line

    for t, _, line in lines(path):
        while clock.t + tick_s < t:
            clock.t += tick_s
            if probe.should_stop():
                feed.finish()
                return clock.t
        clock.t = max(clock.t, t)
        handle_line(probe, feed, line, echo=False)
        if probe.should_stop():
            break
    feed.finish()
    return clock.t


def replay_cell(path: Path, duration_s: float, progress: str = "") -> tuple[dict[str, Any], list[str]]:
    """A capture read as a `--duration duration_s` cell of the command suite reads its program
    (the automatic warm-up, the same readers): the cell's metrics and warnings, with
    `replay_window` (the capture's seconds the measured window spans) for computing the same
    rate by hand."""
    from harness.cell.steady import DEFAULT_CAP_S, Steady
    from harness.probe import Probe
    from harness.program.launch import _declared_counter
    from harness.readers import Feed, line_readers

    clock = ReplayClock()
    probe = Probe(duration_s=duration_s, steady=Steady.for_window(0.0, DEFAULT_CAP_S, duration_s), clock=clock)
    readers = line_readers(progress)
    feed = Feed(probe, readers, clock=clock, headline=_declared_counter(readers))
    replay(path, probe, feed, clock)
    metrics = probe.finish()
    metrics["replay_window"] = [probe._measure_start, probe._measure_end]  # noqa: SLF001 - the replay's own probe
    return metrics, probe.warnings
