"""What the instruments saw, as a record's metrics: the where-the-time-went tables per role
and per process, time series, and the generic signals (harness.model.vocabulary.SIGNALS) that
the diagnosis rules read.

Each signal is taken from the process or role where the symptom is strongest, and comes
with where it was seen (`*_process`, `*_role`, `*_site`: a file:line and its source), so
a finding can say which process and which line. Helper and harness processes
(harness.watch.roles.IGNORED) are in the tables but never in a signal.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.monitors.procstat import ProcInfo
from harness.watch.breakdown import INDEX, Breakdown, shares
from harness.watch.chrometrace import ThreadTimeline
from harness.watch.classify import BLOCKED, BUSY, CATEGORIES, GIL_WAIT, IPC, SLEEP
from harness.watch.roles import IGNORED, MAIN, WORKERS

PROCESS_TABLE_MAX = 64
# The signals only the stacks give: absent when py-spy saw nothing (harness.monitors.blind).
FROM_STACKS = (
    "sleep_share", "sleep_process", "sleep_site", "gil_wait_share", "gil_threads", "gil_cpu_cores", "gil_process",
    "gil_compute_spread",
    "ipc_share", "ipc_share_growth", "ipc_role", "ipc_site", "worker_wait_pct",
)  # fmt: skip
MIN_THIRD_BUSY_S = 0.2  # busy seconds a role needs in the first and last third to compare them
MIN_GIL_BUSY_S = 0.5
_CUDA = re.compile(r"\bcuda(:\d+)?\b", re.IGNORECASE)
_NEGATED = re.compile(r"^-+(no|disable|without)[-_]", re.IGNORECASE)
_FALSE = frozenset({"false", "f", "no", "n", "off", "0", "none", ""})
_RAN_COLS = [INDEX[c] for c in BUSY]
_BUSY_COLS = [*_RAN_COLS, INDEX[GIL_WAIT]]
_WAIT_COLS = [INDEX[c] for c in (SLEEP, BLOCKED)]


def _rates(info: ProcInfo) -> dict[str, float]:
    """CPU, wake-ups and traffic of one process over the samples /proc gave."""
    s = info.samples
    if len(s) < 2 or s[-1][0] <= s[0][0]:
        return {}
    dt = s[-1][0] - s[0][0]
    return {
        "cpu_cores": (s[-1][1] - s[0][1]) / dt,
        "wakeups_hz": (s[-1][6] - s[0][6]) / dt,
        "read_mb_s": (s[-1][2] - s[0][2]) / dt / 2**20,
        "write_mb_s": (s[-1][3] - s[0][3]) / dt / 2**20,
    }


def _runnable_cores(info: ProcInfo, threads: Mapping[tuple[int, int], list[tuple[float, float, float, int]]]) -> float | None:
    """Cores the process's threads ran or sat runnable in the run queue, on average over its
    samples (schedstat): what it wanted, where its CPU is what it got. A worker that computes
    without pause on a crowded machine gets a tenth of a core and wants a whole one (watched
    beside 8 busy sessions on 2 cores: 0.10-0.12 cores got). None when its threads were not
    read (over PER_THREAD_MAX of them) or it was sampled once."""
    s = info.samples
    if not info.threads_read or len(s) < 2 or s[-1][0] <= s[0][0]:
        return None
    wanted = 0.0
    for (pid, _), samples in threads.items():
        if pid == info.pid and len(samples) >= 2:
            wanted += (samples[-1][1] + samples[-1][2]) - (samples[0][1] + samples[0][2])
    return wanted / (s[-1][0] - s[0][0])


def _write_size(info: ProcInfo) -> tuple[float, float, float] | None:
    """Bytes per write call over the first and the last third of its samples, and the
    bytes written in the last third."""
    s = info.samples
    if len(s) < 4:
        return None
    t0, t1 = s[0][0], s[-1][0]
    cut1, cut2 = t0 + (t1 - t0) / 3, t1 - (t1 - t0) / 3
    early = [x for x in s if x[0] <= cut1]
    late = [x for x in s if x[0] >= cut2]
    if len(early) < 2 or len(late) < 2:
        return None

    def per_call(part: list[tuple[float, float, int, int, int, int, int]]) -> float | None:
        calls = part[-1][5] - part[0][5]
        return (part[-1][3] - part[0][3]) / calls if calls > 0 else None

    a, b = per_call(early), per_call(late)
    if a is None or b is None:
        return None
    return a, b, float(late[-1][3] - late[0][3])


def _top_sites(lines: Sequence[ThreadTimeline]) -> dict[str, str]:
    """category -> the line most of that category's time was spent on."""
    sites: Counter[tuple[str, str]] = Counter()
    for line in lines:
        sites.update(line.sites)
    best: dict[str, tuple[float, str]] = {}
    for (category, site), seconds in sites.items():
        if seconds > best.get(category, (0.0, ""))[0]:
            best[category] = (seconds, site)
    return {category: site for category, (_, site) in best.items()}


def _busiest_thread(breakdown: Breakdown, pid: int) -> str | None:
    """'<name> <busy> %': the process's thread busiest for the largest share of its own time,
    so one saturated thread is not diluted by the idle ones beside it in the shares."""
    best: tuple[float, str] | None = None
    for (p, tid), arr in breakdown.threads.items():
        total = float(arr.sum())
        if p != pid or total <= 0:
            continue
        busy = float(arr[:, _BUSY_COLS].sum()) / total
        if best is None or busy > best[0]:
            best = (busy, str(breakdown.names.get((p, tid), tid)))
    return f"{best[1]} {100 * best[0]:.0f} %" if best else None


def _compute_spread(breakdown: Breakdown, pid: int) -> float | None:
    """The process's compute (the time its threads ran Python, GIL waits excluded) over its
    busiest thread's: how many cores that compute could fill if the GIL let the threads run
    at once, so the most that processes could gain. Four CPU-bound threads read 4; a spinning
    main thread beside the feeder thread of a multiprocessing.Queue reads about 1: the feeder
    waits a switch interval for the GIL on every item (a share of the process's time that
    looks like contention) but has nothing to run in parallel. None without compute."""
    ran = [float(arr[:, _RAN_COLS].sum()) for (p, _), arr in breakdown.threads.items() if p == pid]
    busiest = max(ran, default=0.0)
    return sum(ran) / busiest if busiest > 0 else None


def _pct(values: Mapping[str, float]) -> dict[str, float]:
    return {k: round(100.0 * v, 1) for k, v in values.items()}


def collect(
    breakdown: Breakdown,
    procs: Mapping[int, ProcInfo],
    roles: Mapping[int, str],
    timelines: Sequence[ThreadTimeline],
    entries: Mapping[int, str | None],
    threads: Mapping[tuple[int, int], list[tuple[float, float, float, int]]],
    program: Sequence[str] | None = None,
) -> tuple[dict[str, Any], list[tuple[float, str, float]]]:
    """(metrics, series) from everything the instruments saw; `threads` is /proc's
    per-thread samples, (pid, tid) -> [(wall, run_s, runq_s, voluntary switches)]."""
    metrics: dict[str, Any] = {}
    by_pid: dict[int, list[ThreadTimeline]] = {}
    for line in timelines:
        by_pid.setdefault(line.pid, []).append(line)
    rates = {pid: _rates(info) for pid, info in procs.items()}
    for pid, info in procs.items():
        if rates[pid] and (runnable := _runnable_cores(info, threads)) is not None:
            rates[pid]["runnable_cores"] = runnable
    window = float(breakdown.edges[-1] - breakdown.edges[0])

    # ------------------------------------------------------------ tables
    table: dict[str, dict[str, Any]] = {}
    for pid, info in procs.items():
        arr = breakdown.process(pid)
        table[str(pid)] = {
            "role": roles.get(pid, "?"),
            "entry": entries.get(pid),
            "name": info.name,
            "threads": len(by_pid.get(pid, [])),
            **{k: round(v, 3) for k, v in rates[pid].items()},
            **({"pct": _pct(shares(arr))} if arr.sum() > 0 else {}),
            **({"sites": _top_sites(by_pid[pid])} if pid in by_pid else {}),
            **({"busiest_thread": top} if (top := _busiest_thread(breakdown, pid)) else {}),
        }
    busiest = sorted(table, key=lambda p: -float(table[p].get("cpu_cores", 0.0)))[:PROCESS_TABLE_MAX]
    metrics["watch_procs"] = {p: table[p] for p in busiest}
    role_table: dict[str, dict[str, Any]] = {}
    for role in dict.fromkeys(roles[p] for p in procs if p in roles):
        pids = [p for p in procs if roles.get(p) == role]
        arr = breakdown.group(pids)
        row: dict[str, Any] = {"processes": len(pids), "threads": sum(len(by_pid.get(p, [])) for p in pids)}
        for key in ("cpu_cores", "wakeups_hz", "read_mb_s", "write_mb_s"):
            row[key] = round(sum(rates[p].get(key, 0.0) for p in pids), 3)
        if arr.sum() > 0:
            row["pct"] = _pct(shares(arr))
        role_table[role] = row
    metrics["watch_roles"] = role_table

    # ------------------------------------------------------------ signals
    program_pids = [p for p in procs if roles.get(p) not in IGNORED]
    sleepy = []
    in_program = set(program_pids)
    for (pid, tid), arr in breakdown.threads.items():
        samples = threads.get((pid, tid)) or []
        if pid not in in_program or arr.sum() <= 0 or len(samples) < 2 or samples[-1][0] <= samples[0][0]:
            continue
        share = float(arr[:, INDEX[SLEEP]].sum() / arr.sum())
        wakeups = (samples[-1][3] - samples[0][3]) / (samples[-1][0] - samples[0][0])
        sleepy.append((share * wakeups, share, wakeups, pid, tid))
    if sleepy:
        _, share, wakeups, pid, tid = max(sleepy)
        metrics["sleep_share"] = share
        metrics["wakeups_hz"] = wakeups
        metrics["sleep_process"] = f"pid {pid} ({roles.get(pid)}), thread {breakdown.names.get((pid, tid), tid)}"
        site = _top_sites([line for line in by_pid.get(pid, []) if line.tid == tid]).get(SLEEP)
        if site:
            metrics["sleep_site"] = site

    # The process shown is the one whose GIL waits hold back the most compute that could run
    # in parallel (its wait share x (1 - 1 / spread)), so actors' queue feeders waiting beside
    # one spinning thread each do not hide a learner whose threads are truly serialized.
    gil = []
    for pid in program_pids:
        if len(by_pid.get(pid, [])) < 2:
            continue
        arr = breakdown.process(pid)
        wanting = float(arr[:, _BUSY_COLS].sum())
        if wanting >= MIN_GIL_BUSY_S:
            share = float(arr[:, INDEX[GIL_WAIT]].sum()) / wanting
            spread = _compute_spread(breakdown, pid)
            held_back = share * (1.0 - 1.0 / spread) if spread is not None else share
            gil.append((held_back, share, spread, wanting, pid))
    if gil:
        _, share, spread, wanting, pid = max(gil, key=lambda row: (row[0], row[3]))  # ties: the busier process
        metrics["gil_wait_share"] = share
        metrics["gil_threads"] = wanting / window if window > 0 else 0.0
        metrics["gil_cpu_cores"] = rates[pid].get("cpu_cores")
        metrics["gil_process"] = f"pid {pid} ({roles.get(pid)})"
        if spread is not None:
            metrics["gil_compute_spread"] = spread

    ipc = []
    third = max(1, breakdown.bins // 3)
    for role in {roles[p] for p in program_pids if p in roles}:
        pids = [p for p in program_pids if roles.get(p) == role]
        arr = breakdown.group(pids)
        early, late = arr[:third], arr[-third:]
        busy_early, busy_late = early[:, _BUSY_COLS].sum(), late[:, _BUSY_COLS].sum()
        if breakdown.bins < 3 or busy_early < MIN_THIRD_BUSY_S or busy_late < MIN_THIRD_BUSY_S:
            continue
        share_early = float(early[:, INDEX[IPC]].sum() / busy_early)
        share_late = float(late[:, INDEX[IPC]].sum() / busy_late)
        ipc.append((share_late, max(share_early, 0.01), role, pids))
    if ipc:
        share_late, share_early, role, pids = max(ipc)
        metrics["ipc_share"] = share_late
        metrics["ipc_share_growth"] = share_late / share_early
        metrics["ipc_role"] = role
        site = _top_sites([line for p in pids for line in by_pid.get(p, [])]).get(IPC)
        if site:
            metrics["ipc_site"] = site
    sizes = [(size[2], size, pid) for pid in program_pids if (size := _write_size(procs[pid])) is not None]
    if sizes:
        _, (early, late, _), pid = max(sizes)
        metrics["write_size_growth"] = late / early if early > 0 else None
        metrics["write_size_bytes"] = {
            "early": round(early),
            "late": round(late),
            "process": f"pid {pid} ({roles.get(pid)})",
        }

    workers = [p for p in program_pids if roles.get(p) == WORKERS and "cpu_cores" in rates[p]]
    if workers:
        metrics["worker_cpu_pct"] = {str(p): round(100.0 * rates[p]["cpu_cores"], 2) for p in workers}
        waiting = {}
        for p in workers:
            arr = breakdown.process(p)
            if arr.sum() > 0:
                waiting[str(p)] = round(100.0 * float(arr[:, _WAIT_COLS].sum() / arr.sum()), 1)
        if waiting:
            metrics["worker_wait_pct"] = waiting
        runnable = {str(p): round(100.0 * rates[p]["runnable_cores"], 2) for p in workers if "runnable_cores" in rates[p]}
        if runnable:
            metrics["worker_runnable_pct"] = runnable
        wakeups = {str(p): round(rates[p]["wakeups_hz"], 1) for p in workers if "wakeups_hz" in rates[p]}
        if wakeups:
            metrics["worker_wakeups_hz"] = wakeups
        others = [p for p in program_pids if roles.get(p) != WORKERS]
        metrics["main_cpu_pct"] = 100.0 * sum(rates[p].get("cpu_cores", 0.0) for p in others)
        busiest = max(others, key=lambda p: rates[p].get("cpu_cores", 0.0), default=None)
        if busiest is not None:
            metrics["waited_on"] = {
                "pid": busiest,
                "role": roles.get(busiest),
                "cpu_pct": round(100.0 * rates[busiest].get("cpu_cores", 0.0), 1),
            }
    if program is not None or any(roles.get(p) == MAIN for p in procs):
        words = list(program or next((procs[p].cmdline for p in procs if roles.get(p) == MAIN), []))
        metrics["gpu_asked"] = 1.0 if asks_for_cuda(words) else 0.0

    return metrics, _series(breakdown, procs, roles)


def asks_for_cuda(words: Sequence[str]) -> bool:
    """Whether a command line asks for a GPU: a word naming cuda as a value (`--device cuda`,
    `device=cuda:1`) or a cuda flag that is on (`--cuda`, `--cuda True`). Not a flag turned off
    (`--cuda False`, `--cuda=0`, `--no-cuda`): CleanRL's PPO run on the CPU with `--cuda False`
    was told that its net ran off a GPU it had asked for."""
    for i, word in enumerate(words):
        if not _CUDA.search(word) or _NEGATED.match(word):
            continue
        name, equals, value = word.partition("=")
        if equals:  # --device=cuda:1, device=cuda; --cuda=True, use-cuda=1 (not --cuda=False)
            if _CUDA.search(value) or value.strip().lower() not in _FALSE:
                return True
            continue
        if not name.startswith("-"):
            return True  # a value naming cuda: `--device cuda`
        if not _CUDA.search(name.lstrip("-").split("-")[-1].split("_")[-1]):
            return True  # a flag such as --cuda-device whose value follows: asked by naming it
        following = words[i + 1] if i + 1 < len(words) else None
        if following is None or following.startswith("-") or following.strip().lower() not in _FALSE:
            return True
    return False


def _series(
    breakdown: Breakdown, procs: Mapping[int, ProcInfo], roles: Mapping[int, str]
) -> list[tuple[float, str, float]]:
    """Per role and bin: each category's share of its thread time, and its CPU, wake-ups
    and traffic (from /proc's cumulative counters, interpolated at the bin edges)."""
    edges = breakdown.edges
    mids = (edges[:-1] + edges[1:]) / 2
    widths = np.diff(edges)
    rows: list[tuple[float, str, float]] = []
    for role in sorted(set(roles.values()) - set(IGNORED)):
        pids = [p for p in procs if roles.get(p) == role]
        arr = breakdown.group(pids)
        totals = arr.sum(axis=1)
        for name, i in INDEX.items():
            if arr[:, i].sum() <= 0:
                continue
            share = np.divide(arr[:, i], totals, out=np.zeros_like(totals), where=totals > 0)
            rows += [
                (float(t), f"where_{role}_{name}", float(v))
                for t, v, n in zip(mids, share, totals, strict=True)
                if n > 0
            ]
        sums = np.zeros((len(widths), 4))
        for pid in pids:
            s = procs[pid].samples
            if len(s) < 2:
                continue
            walls = np.array([x[0] for x in s])
            inside = (edges[:-1] >= walls[0] - 1e-6) & (edges[1:] <= walls[-1] + 1e-6)
            for j, col in enumerate((1, 6, 2, 3)):
                at = np.interp(edges, walls, np.array([float(x[col]) for x in s]))
                sums[:, j] += np.where(inside, np.diff(at), 0.0)
        if not sums.any():
            continue
        per_s = sums / widths[:, None]
        for j, (name, scale) in enumerate(
            (
                (f"cpu_{role}_cores", 1.0),
                (f"wakeups_{role}_hz", 1.0),
                (f"read_{role}_mb_s", 2**-20),
                (f"write_{role}_mb_s", 2**-20),
            )
        ):
            rows += [(float(t), name, float(v * scale)) for t, v in zip(mids, per_s[:, j], strict=True)]
    assert len(CATEGORIES) == len(INDEX)
    return rows
