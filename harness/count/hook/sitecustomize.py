"""Injected by a counted run (`harness ab --measure instructions`; a directory holding only
this file, first on the program's PYTHONPATH): marks the program's progress lines for
callgrind, from inside the process that writes them.

Nothing happens unless HARNESS_COUNT_SOCKET is set. Then sys.stdout and sys.stderr are
wrapped: each complete line the program writes through them (a line holding a digit: every
progress line does) is sent to the harness over that Unix socket, and the process waits for
the harness's answer before it goes on. The harness reads the line as it reads any progress
(harness.readers) and answers what callgrind is to do at this point of the program: start
counting (the warm-up has passed), dump the counts (the middle or the end of the window),
or nothing. Callgrind is told by a client request: the special no-op instruction sequence
valgrind recognises (x86-64 only), executed from a few bytes of machine code mapped here,
so no compiler and no valgrind headers are needed; run without valgrind it does nothing.
The process is stopped in the exchange, so a window opens and closes at the same point of
its work in every run: exact to the instruction, where an outside `callgrind_control`
acts whenever the process next polls for commands (milliseconds, thousands of units of a
fast loop, later).

The exchange itself is not counted: collection is switched off on entry and on again on
the way out (CALLGRIND_TOGGLE_COLLECT, paired), so the count does not depend on how many
lines a program prints. A forked child opens its own connection. Nothing here may break
the program: on any failure the wrapper stops marking and only writes. The sitecustomize
this file hides (any other one on sys.path) is run afterwards.
"""

from __future__ import annotations

import os
import sys

_SOCKET = os.environ.get("HARNESS_COUNT_SOCKET")
_LAYOUT = os.environ.get("HARNESS_COUNT_LAYOUT", "")
_KEPT: list = []  # what shifted the layout, alive for the life of the process

# callgrind's client requests (valgrind/callgrind.h): VG_USERREQ_TOOL_BASE('C', 'T') + n
_BASE = (ord("C") << 24) | (ord("T") << 16)
DUMP_STATS_AT, TOGGLE_COLLECT, START_INSTRUMENTATION, STOP_INSTRUMENTATION = _BASE + 3, _BASE + 2, _BASE + 4, _BASE + 5
RUNNING_ON_VALGRIND = 0x1001
# f(args: *u64, default: u64) -> u64: rax = args, rdx = default, valgrind's preamble (rdi
# rotated by 3, 13, 61, 51: 128 bits, a no-op), xchg rbx, rbx (the request), result in rdx
_CODE = bytes.fromhex(
    "4889f8" "4889f2" "48c1c703" "48c1c70d" "48c1c73d" "48c1c733" "4887db" "4889d0" "c3"
)  # fmt: skip
# the harness's answers: one byte each; DONE, the hook's: the answer was carried out
GO_ON, START, MIDDLE, END, LEAVE, DONE = b".", b"S", b"M", b"E", b"X", b"D"


def client_request():
    """A callable issuing one valgrind client request, or None where this machine cannot."""
    import ctypes
    import mmap
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64") or sys.platform != "linux":
        return None
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(_CODE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    call = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64)(address)
    args = (ctypes.c_uint64 * 6)()

    def request(code: int, arg1: int = 0) -> int:
        args[0], args[1] = code, arg1
        return call(ctypes.addressof(args), 0)

    request.keep = (page, call, args)  # type: ignore[attr-defined]
    return request


def _install() -> None:
    import ctypes
    import socket
    import threading

    request = client_request()
    if request is None:
        return
    labels = {MIDDLE: ctypes.create_string_buffer(b"middle"), END: ctypes.create_string_buffer(b"end")}
    state: dict = {"pid": None, "sock": None, "off": False, "counting": False}
    lock = threading.Lock()

    def connection():
        if state["pid"] != os.getpid():  # a forked child: its own connection (valgrind's state is inherited)
            state["pid"], state["sock"] = os.getpid(), None
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(_SOCKET)
            state["sock"] = sock
        return state["sock"]

    def mark(line: str) -> None:
        with lock:
            if state["off"]:
                return
            # the exchange is not the program's work: collection off while it lasts. Only
            # once counting: before, nothing is counted, and START_INSTRUMENTATION resets
            # the collection state (a toggle around it would leave collection off)
            counting = state["counting"]
            if counting:
                request(TOGGLE_COLLECT)
            try:
                sock = connection()
                sock.sendall(f"{os.getpid()} {line}\n".encode("utf-8", "replace"))
                answer = sock.recv(1)
                if answer == START:
                    request(START_INSTRUMENTATION)
                    state["counting"] = True
                elif answer in (MIDDLE, END):
                    request(DUMP_STATS_AT, ctypes.addressof(labels[answer]))
                    if answer == END:
                        request(STOP_INSTRUMENTATION)
                        state["counting"] = counting = False
                elif answer != GO_ON:  # LEAVE, or the harness went away
                    state["off"] = True
                if answer in (START, MIDDLE, END):
                    sock.sendall(DONE)  # the harness waits for this before it acts on the others
            except OSError:
                state["off"] = True
            finally:
                if counting:
                    request(TOGGLE_COLLECT)

    class Marked:
        """The program's stream, its complete lines marked as they are written."""

        def __init__(self, stream) -> None:
            self._stream, self._pending = stream, ""

        def write(self, text):
            written = self._stream.write(text)
            if "\n" in text:
                lines = (self._pending + text).split("\n")
                self._pending = lines.pop()[-4096:]
                for line in lines:
                    if any(c.isdigit() for c in line):
                        mark(line)
            else:
                self._pending = (self._pending + text)[-4096:]
            return written

        def __getattr__(self, name):
            return getattr(self._stream, name)

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name, None)
        if stream is not None:
            setattr(sys, name, Marked(stream))


def shift_layout(k: int) -> None:
    """Layout number `k` (0: as it is): objects allocated and kept, and classes given their
    attribute-cache version tags, before the program's first import. CPython's type-attribute
    cache is indexed by a type's version tag and the address of the name looked up, and dicts
    and the allocator follow what was allocated before: so an A/B of two revisions in one
    layout measures their change plus that layout's collisions. Counting each side in a few
    layouts shows how much of the ratio is the layout's (harness.count.verdict)."""
    if k <= 0:
        return
    _KEPT.append(bytearray(4096 * k + 40 * k))  # the heap: a block from the C allocator
    _KEPT.append([str(i) for i in range(97 * k)])  # the small-object arenas
    for i in range(29 * k):  # version tags: each new class looked up takes the next one
        kind = type(f"_Layout{i}", (), {})
        getattr(kind, "_layout_lookup", None)  # the lookup gives the class its tag
        _KEPT.append(kind)


def _chain() -> None:
    """Run the sitecustomize this one shadows, as if it had been found first."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if _SOCKET:
    try:
        shift_layout(int(_LAYOUT or 0))
        _install()
    except Exception:  # noqa: BLE001 - never stop the program from starting
        pass
_chain()
