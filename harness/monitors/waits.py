"""What each blocked thread of a process tree waits on, and which processes of the tree hold
the other end, read from /proc (Linux; nothing is paused or signalled).

Every pass, for each thread: its state (/proc/PID/task/TID/stat) and, when it sleeps, the
system call it sleeps in and its arguments (/proc/PID/task/TID/syscall). The call names the
object:
- read/recv*/write/send* on a file descriptor: /proc/PID/fd/N is `pipe:[inode]` or
  `socket:[inode]`; poll/select/epoll_wait: the descriptors they watch (poll's and select's
  arrays read from /proc/PID/mem, epoll's from /proc/PID/fdinfo);
- futex: the address's mapping in /proc/PID/maps; in a shared mapping of a file (a POSIX
  semaphore of multiprocessing lives in /dev/shm, deleted once every process has mapped it)
  the object is that file's inode, in private memory it is the process's own (a thread of it
  wakes it: a Condition, a queue.Queue);
- wait4/waitid: a child's exit; nanosleep/clock_nanosleep: a sleep.
The other end: for a pipe, the processes holding its other end (fdinfo's flags tell a write
end from a read end; multiprocessing's fork hands both ends to every child, so the holders
are kept and the interpretation ranks them by the CPU they used); for a unix socket, the
peer socket's inode (the kernel's sock_diag netlink, UDIAG_SHOW_PEER) and its holders; for
TCP, the connection whose local address is this one's remote (/proc/net/tcp, tcp6); for a
shared futex, the other processes mapping the same file.

The sampler limits itself like harness.monitors.procstat: its period stretches so that its
own CPU stays under MAX_SHARE of a core. It counts the sleeping threads it saw
(`waits_asleep`) and those whose system call it could not read (`waits_unreadable`: reading
/proc/PID/task/TID/syscall needs ptrace permission), so a reader that saw nothing says why
(harness.monitors.blind).
"""

from __future__ import annotations

import bisect
import contextlib
import os
import platform
import socket
import struct
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from harness.cell.processes import tree
from harness.monitors.base import MonitorResult, SamplingMonitor

MAX_SHARE = 0.02
DEFAULT_PERIOD_S = 0.2
THREADS_MAX = 64  # a process with more threads is read by its first THREADS_MAX
POLL_FDS_MAX = 256

# (read-like, write-like, poll, ppoll, select, pselect, epoll, futex, wait, sleep) by machine
_X86_64 = {
    "read": {0, 17, 19, 45, 47, 295, 299},  # read pread64 readv recvfrom recvmsg preadv recvmmsg
    "write": {1, 18, 20, 44, 46, 296, 307},  # write pwrite64 writev sendto sendmsg pwritev sendmmsg
    "poll": {7},
    "ppoll": {271},
    "select": {23},
    "pselect": {270},
    "epoll": {232, 281, 441},
    "futex": {202},
    "reap": {61, 247},
    "sleep": {35, 230},
    "accept": {43, 288},
}
_AARCH64 = {
    "read": {63, 65, 67, 69, 207, 212, 243},
    "write": {64, 66, 68, 70, 206, 211, 269},
    "poll": set(),
    "ppoll": {73},
    "select": set(),
    "pselect": {72},
    "epoll": {22, 441},
    "futex": {98},
    "reap": {260, 95},
    "sleep": {101, 115},
    "accept": {202, 242},
}
CALLS = {"x86_64": _X86_64, "aarch64": _AARCH64}.get(platform.machine(), {})
_BY_NUMBER = {nr: kind for kind, numbers in CALLS.items() for nr in numbers}


@dataclass(frozen=True)
class Wait:
    """One blocked thread at one instant: the call's kind and the objects it waits on
    ("pipe:123", "socket:456", "shm:dev:inode", "private", "child", "sleep", "?")."""

    kind: str
    objects: tuple[str, ...]
    write: bool = False  # blocked writing (waits on the reader), not reading


@dataclass
class WaitSamples:
    """Everything the sampler saw: per pass and process, whether any thread ran and what the
    blocked ones waited on; and, for each object, the processes holding it."""

    passes: list[tuple[float, dict[int, tuple[bool, list[Wait]]]]] = field(default_factory=list)
    # object -> {pid: "r" | "w" | "rw" | "m"}: who holds it (m: maps the shared file)
    holders: dict[str, dict[int, str]] = field(default_factory=dict)
    peers: dict[str, str] = field(default_factory=dict)  # socket object -> its peer's object
    cpu: dict[int, tuple[float, float, float, float]] = field(default_factory=dict)  # pid -> (t0, cpu0, t1, cpu1)
    names: dict[int, str] = field(default_factory=dict)

    def cpu_cores(self, pid: int) -> float:
        t0, c0, t1, c1 = self.cpu.get(pid, (0.0, 0.0, 0.0, 0.0))
        return (c1 - c0) / (t1 - t0) if t1 > t0 else 0.0


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode(errors="replace")
    except OSError:
        return None


def _link(pid: int, fd: int) -> str | None:
    try:
        target = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return None
    for prefix in ("pipe:[", "socket:["):
        if target.startswith(prefix):
            return f"{prefix[:-2]}:{target[len(prefix) : -1]}"
    return None


def _flags(pid: int, fd: int) -> int:
    text = _read(f"/proc/{pid}/fdinfo/{fd}") or ""
    for line in text.splitlines():
        if line.startswith("flags:"):
            return int(line.split()[1], 8)
    return 0


def _read_mem(pid: int, address: int, size: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            mem.seek(address)
            return mem.read(size)
    except (OSError, ValueError, OverflowError):
        return None


def _poll_fds(pid: int, address: int, count: int) -> list[int]:
    raw = _read_mem(pid, address, 8 * min(count, POLL_FDS_MAX))
    if not raw:
        return []
    return [fd for (fd, _events, _revents) in struct.iter_unpack("ihh", raw) if fd >= 0]


def _select_fds(pid: int, nfds: int, address: int) -> list[int]:
    if not address:
        return []
    raw = _read_mem(pid, address, (min(nfds, 1024) + 7) // 8)
    if not raw:
        return []
    return [i for i in range(min(nfds, 8 * len(raw))) if raw[i // 8] >> (i % 8) & 1]


def _epoll_fds(pid: int, epfd: int) -> list[int]:
    text = _read(f"/proc/{pid}/fdinfo/{epfd}") or ""
    return [int(line.split()[1]) for line in text.splitlines() if line.startswith("tfd:")]


def _shared_ranges(pid: int) -> list[tuple[int, int, str]]:
    """(low, high, 'shm:<dev>:<inode>') for every shared mapping of a file, sorted."""
    out = []
    for line in (_read(f"/proc/{pid}/maps") or "").splitlines():
        parts = line.split(None, 5)
        if len(parts) >= 5 and parts[1][3:4] == "s" and parts[4] != "0":
            low, _, high = parts[0].partition("-")
            out.append((int(low, 16), int(high, 16), f"shm:{parts[3]}:{parts[4]}"))
    return sorted(out)


class ProcCache:
    """Each process's shared mappings and descriptors, re-read at most every REFRESH_S (or
    when a lookup misses): reading /proc/PID/maps of a process with torch loaded costs
    milliseconds, and a semaphore's mapping does not move."""

    REFRESH_S = 2.0

    def __init__(self) -> None:
        self.maps: dict[int, tuple[float, list[tuple[int, int, str]]]] = {}
        self.fds: dict[int, tuple[float, dict[int, tuple[str, str]]]] = {}

    def mapping(self, pid: int, address: int) -> str:
        """'shm:<dev>:<inode>' for a shared mapping of a file, else 'private'."""
        for attempt in range(2):
            at, ranges = self.maps.get(pid, (0.0, []))
            if attempt or time.monotonic() - at > self.REFRESH_S:
                ranges = _shared_ranges(pid)
                self.maps[pid] = (time.monotonic(), ranges)
            i = bisect.bisect_right(ranges, (address, float("inf"), "")) - 1
            if i >= 0 and ranges[i][0] <= address < ranges[i][1]:
                return ranges[i][2]
            if time.monotonic() - self.maps[pid][0] < 0.05:
                break
        return "private"

    def descriptors(self, pid: int, fresh: bool = False) -> dict[int, tuple[str, str]]:
        """fd -> (object, mode: r / w / rw) for its pipes and sockets."""
        at, table = self.fds.get(pid, (0.0, {}))
        if fresh or time.monotonic() - at > self.REFRESH_S:
            table = {}
            try:
                names = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                names = []
            for name in names:
                obj = _link(pid, int(name))
                if obj is not None:
                    mode = ("w" if _flags(pid, int(name)) & 0o3 == 1 else "r") if obj.startswith("pipe:") else "rw"
                    table[int(name)] = (obj, mode)
            self.fds[pid] = (time.monotonic(), table)
        return table

    def link(self, pid: int, fd: int) -> str | None:
        found = self.descriptors(pid).get(fd)
        if found is None:
            found = self.descriptors(pid, fresh=True).get(fd)
        return found[0] if found else None


def classify(pid: int, tid: int, syscall: str, cache: ProcCache | None = None) -> Wait | None:
    """What a sleeping thread waits on, from its /proc/PID/task/TID/syscall line."""
    cache = cache or ProcCache()
    words = syscall.split()
    if not words or not words[0].lstrip("-").isdigit() or int(words[0]) < 0:
        return None  # running (or not in a call)
    nr = int(words[0])
    args = [int(w, 16) for w in words[1:7]]
    kind = _BY_NUMBER.get(nr)
    if kind in ("read", "write", "accept"):
        obj = cache.link(pid, args[0])
        return Wait(kind, (obj,) if obj else ("?",), write=kind == "write")
    if kind in ("poll", "ppoll"):
        fds = _poll_fds(pid, args[0], args[1])
    elif kind in ("select", "pselect"):
        fds = _select_fds(pid, args[0], args[1])
    elif kind == "epoll":
        fds = _epoll_fds(pid, args[0])
    elif kind == "futex":
        return Wait("futex", (cache.mapping(pid, args[0]),))
    elif kind == "reap":
        return Wait("reap", ("child",))
    elif kind == "sleep":
        return Wait("sleep", ("sleep",))
    else:
        return Wait("other", ("?",))
    objects = tuple(dict.fromkeys(o for fd in fds if (o := cache.link(pid, fd))))
    return Wait("poll", objects or (("sleep",) if not fds else ("?",)))


def unix_peers() -> dict[str, str]:
    """socket object -> its peer's, for every unix socket with a peer (sock_diag netlink)."""
    peers: dict[str, str] = {}
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4)  # NETLINK_SOCK_DIAG
    except (OSError, AttributeError):
        return peers
    with sock:
        request = struct.pack("=BBHIIIII", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, 0, 4, 0, 0)  # UDIAG_SHOW_PEER
        header = struct.pack("=IHHII", 16 + len(request), 20, 0x301, 1, 0)  # SOCK_DIAG_BY_FAMILY, REQUEST|DUMP
        try:
            sock.send(header + request)
        except OSError:
            return peers
        done = False
        while not done:
            try:
                data = sock.recv(1 << 16)
            except OSError:
                break
            offset = 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, offset)
                if length < 16 or kind in (2, 3):  # NLMSG_ERROR, NLMSG_DONE
                    done = True
                    break
                body = offset + 16
                ino = struct.unpack_from("=I", data, body + 4)[0]
                attr = body + 16
                while attr + 4 <= offset + length:
                    alen, atype = struct.unpack_from("=HH", data, attr)
                    if alen < 4:
                        break
                    if atype == 2 and alen >= 8:  # UNIX_DIAG_PEER
                        peers[f"socket:{ino}"] = f"socket:{struct.unpack_from('=I', data, attr + 4)[0]}"
                    attr += (alen + 3) & ~3
                offset += (length + 3) & ~3
            if not data:
                break
    return peers


def tcp_peers() -> dict[str, str]:
    """socket object -> its peer's, for TCP connections both of whose ends are on this machine."""
    by_pair: dict[tuple[str, str], str] = {}
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in (_read(name) or "").splitlines()[1:]:
            parts = line.split()
            if len(parts) > 9 and parts[9] != "0":
                by_pair[(parts[1], parts[2])] = f"socket:{parts[9]}"
    return {obj: peer for (local, remote), obj in by_pair.items() if (peer := by_pair.get((remote, local)))}


class WaitsMonitor(SamplingMonitor):
    """Samples what the tree's blocked threads wait on; `samples` holds it all for
    harness.watch.waits to read. Its metrics are its own cost."""

    name = "waits"

    def __init__(self, period_s: float = DEFAULT_PERIOD_S, max_share: float = MAX_SHARE) -> None:
        super().__init__(period_s)
        self.max_share = max_share
        self.samples = WaitSamples()
        self.cache = ProcCache()
        self.asleep = 0  # sleeping threads seen over all passes ...
        self.unreadable = 0  # ... and those whose system call could not be read
        if not CALLS:
            self.reason = f"the wait reader does not know the system calls of this machine ({platform.machine()})"

    def begin(self, root_pid: int) -> bool:
        return bool(CALLS)

    def sample(self) -> None:
        with contextlib.suppress(OSError, ValueError, IndexError):  # a process vanishing mid-read
            self.sample_once()

    def next_period(self, cost_s: float) -> float:
        return max(self.period_s, cost_s / self.max_share)

    def finish(self) -> None:
        t0 = time.thread_time()
        with contextlib.suppress(OSError, ValueError):
            self.resolve()
        self.own_cpu_s += time.thread_time() - t0

    def sample_once(self, pids: list[int] | None = None) -> None:
        now = time.time()
        seen: dict[int, tuple[bool, list[Wait]]] = {}
        for pid in pids if pids is not None else [p.pid for p in tree(self.root)]:
            state = self._process(pid)
            if state is not None:
                seen[pid] = state
        self.samples.passes.append((now, seen))
        self._holders(list(seen))

    def _process(self, pid: int) -> tuple[bool, list[Wait]] | None:
        try:
            tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))[:THREADS_MAX]
        except OSError:
            return None
        stat = _read(f"/proc/{pid}/stat")
        if stat is None:
            return None
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] == "Z":
            return None
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        t = time.time()
        first = self.samples.cpu.get(pid)
        self.samples.cpu[pid] = (first[0], first[1], t, cpu) if first else (t, cpu, t, cpu)
        if pid not in self.samples.names:
            self.samples.names[pid] = (_read(f"/proc/{pid}/comm") or "?").strip()
        running = False
        waits: list[Wait] = []
        for tid in tids:
            tstat = _read(f"/proc/{pid}/task/{tid}/stat")
            if tstat is None:
                continue
            state = tstat[tstat.rfind(")") + 2]
            if state == "R":
                running = True
                continue
            if state not in "SD":
                continue  # stopped, traced, dead
            line = _read(f"/proc/{pid}/task/{tid}/syscall")
            self.asleep += 1
            self.unreadable += line is None  # no ptrace permission, or a kernel without the file
            wait = classify(pid, tid, line or "", self.cache) if line else None
            if wait is not None:
                waits.append(wait)
        return running, waits

    def _holders(self, pids: list[int]) -> None:
        """Who holds what, from the cached descriptor tables and mappings."""
        holders = self.samples.holders
        for pid in pids:
            for obj, mode in self.cache.descriptors(pid).values():
                have = holders.setdefault(obj, {})
                if mode not in have.get(pid, ""):
                    have[pid] = "".join(sorted(set(have.get(pid, "")) | set(mode)))
            if pid not in self.cache.maps:
                self.cache.mapping(pid, 0)
            for _, _, obj in self.cache.maps[pid][1]:
                holders.setdefault(obj, {})[pid] = "m"

    def _scan(self, pids: list[int]) -> None:
        for pid in pids:
            self.cache.descriptors(pid, fresh=True)
            self.cache.mapping(pid, 0)
        self._holders(pids)

    def resolve(self) -> None:
        """Socket peers, read once at the end (the connections of a long run stay put)."""
        self._scan(list(self.samples.cpu))
        self.samples.peers = {**unix_peers(), **tcp_peers()}

    def result(self) -> MonitorResult:
        kinds = Counter(w.kind for _, seen in self.samples.passes for _, (_, ws) in seen.items() for w in ws)
        metrics: dict[str, Any] = {
            "waits_passes": len(self.samples.passes),
            **self.own_cost("waits_cpu_s", "waits_cpu_pct"),
            "waits_calls": dict(kinds),
            "waits_asleep": self.asleep,
            "waits_unreadable": self.unreadable,
        }
        if self.reason:
            metrics["waits_reason"] = self.reason
        return MonitorResult(metrics=metrics)
