"""What a sampled Python stack is doing: one category per stack, from its frames alone.

py-spy's record formats carry no per-sample "idle" or "holds the GIL" flag, so the
category comes from where the thread is: the innermost Python frame's function and file,
and, for a C call (time.sleep, Lock.acquire, SimpleQueue.get show no frame of their own),
the source line that frame is executing. Waiting for the GIL is not visible in a stack at
all; `harness.watch.breakdown` finds it by comparing the time a thread spent in a busy
category with the time the kernel ran it (or had it ready to run).

Categories, first match wins:
- cuda_sync: inside torch.cuda's synchronize (the host waits for the GPU);
- sleep: the innermost line calls sleep();
- ipc: (un)pickling or sending on a multiprocessing connection (pickle, copyreg,
  multiprocessing.reduction, Connection.send*, a line calling dumps()/loads());
- blocked: waiting on a lock, condition, event, queue, pipe, socket, selector or child
  process (threading, queue, multiprocessing's connection/queues/synchronize/pool/popen,
  selectors, socket, subprocess; a C call such as .acquire(), .recv(), .get() on a line);
- torch: inside a torch module call or autograd (torch/nn/modules, torch/autograd);
- native: no Python frame at all: a thread an extension started with a Python thread state
  (torch's autograd and gloo threads in a DDP rank, sampled with an empty stack the whole
  window) runs or waits in C++; not Python work, so never a contender for the GIL. The
  kernel's run time says how much of it ran (harness.watch.breakdown keeps that as native
  and files the rest as blocked);
- compute: anything else: the thread runs (or wants to run) Python or native code.
"""

from __future__ import annotations

import linecache
import os
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

COMPUTE, TORCH, IPC, GIL_WAIT, SLEEP, BLOCKED, CUDA_SYNC, NATIVE = (
    "compute", "torch", "ipc", "gil_wait", "sleep", "blocked", "cuda_sync", "native",
)  # fmt: skip
CATEGORIES = (COMPUTE, TORCH, IPC, GIL_WAIT, SLEEP, BLOCKED, CUDA_SYNC, NATIVE)
# Categories in which a thread wants a CPU: the only ones that can hide a wait for the GIL.
BUSY = (COMPUTE, TORCH, IPC)


class Frame(NamedTuple):
    name: str
    filename: str
    line: int


_SLEEP_LINE = re.compile(r"\bsleep\s*\(")
_IPC_LINE = re.compile(r"\b(dumps|loads)\s*\(|\bpickle\.(dump|load)\s*\(|\.(dump|load)\s*\(")
_BLOCKING_LINE = re.compile(
    r"\w*acquire\s*\(|\.(wait|recv|recv_into|recvfrom|recv_bytes|accept|communicate|poll)\s*\("
    r"|\bselect\s*\(|\bwaitpid\s*\(|\bos\.wait\s*\("
    r"|\.get\s*\(\s*(\)|block|timeout|True)|\biter\(\s*[\w.]+\.get\s*,"
    r"|^\s*with\s+[\w.\[\]]*(lock|mutex|cond|sem)\w*\s*:",
    re.IGNORECASE,
)
_IPC_FILES = ("/pickle.py", "/copyreg.py", "/multiprocessing/reduction.py")
_SEND = set("send send_bytes _send_bytes _send".split())
# file suffix -> functions that only ever wait (None: every function of that file)
# file suffix -> functions that only ever wait (None: every function of that file). The
# names are written as one string each: they are the standard library's functions.
_BLOCKING_FUNCS: dict[str, set[str] | None] = {
    "/threading.py": set("wait wait_for join _wait_for_tstate_lock acquire __enter__".split()),
    "/queue.py": set("get put join".split()),
    "/multiprocessing/connection.py": set(
        "recv recv_bytes recv_bytes_into _recv_bytes _recv poll _poll wait accept".split()
    ),
    "/multiprocessing/queues.py": set("get put join join_thread".split()),
    "/multiprocessing/synchronize.py": None,
    "/multiprocessing/popen_fork.py": set("wait poll".split()),
    "/multiprocessing/pool.py": set("wait get join _wait_for_updates".split()),
    "/selectors.py": {"select"},
    "/socket.py": set("accept readinto recv_into".split()),
    "/ssl.py": set("read recv recv_into".split()),
    "/subprocess.py": set("wait _wait _try_wait communicate _communicate".split()),
    "/concurrent/futures/_base.py": set("result wait exception".split()),
}
_TORCH_DIRS = ("/torch/nn/modules/", "/torch/autograd/")


@lru_cache(maxsize=65536)
def source_line(filename: str, line: int) -> str:
    """The line a frame executes (cached; empty when the file cannot be read)."""
    if line <= 0 or not filename or filename.startswith("<"):
        return ""
    return linecache.getline(filename, line).strip()


def _function(name: str) -> str:
    """py-spy names methods `Class.method`; the tables list bare function names."""
    return name.rpartition(".")[2]


def _blocking_frame(frame: Frame) -> bool:
    for suffix, names in _BLOCKING_FUNCS.items():
        if frame.filename.endswith(suffix):
            return names is None or _function(frame.name) in names
    return False


def classify(frames: Sequence[Frame], line_of=source_line) -> str:
    """The category of one stack; `frames` innermost first (as py-spy lists them)."""
    if not frames:
        return NATIVE
    files = [f.filename.replace(os.sep, "/") for f in frames]
    if any("/torch/cuda/" in path and "synchronize" in f.name for f, path in zip(frames, files, strict=True)):
        return CUDA_SYNC
    top = frames[0]
    text = line_of(top.filename, top.line)
    if _SLEEP_LINE.search(text):
        return SLEEP
    for frame, path in zip(frames, files, strict=True):
        if path.endswith(_IPC_FILES):
            return IPC
        if path.endswith("/multiprocessing/connection.py") and _function(frame.name) in _SEND:
            return IPC
    if _IPC_LINE.search(text):
        return IPC
    if _blocking_frame(Frame(top.name, files[0], top.line)) or _BLOCKING_LINE.search(text):
        return BLOCKED
    if any(d in path for path in files for d in _TORCH_DIRS):
        return TORCH
    return COMPUTE


def entry_function(frames: Sequence[Frame]) -> str | None:
    """The function a process was started to run: the frame a multiprocessing child's
    `BaseProcess.run` calls (its target; `worker` for a Pool), else the outermost frame's
    function. Processes that share it share a role (workers)."""
    for i, frame in enumerate(frames):
        if _function(frame.name) == "run" and frame.filename.replace(os.sep, "/").endswith("/multiprocessing/process.py"):
            return frames[i - 1].name if i > 0 else None
    return frames[-1].name if frames else None
