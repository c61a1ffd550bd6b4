"""Who waits on whom: the wait edges of a process tree, from what its blocked threads sleep
on (harness.monitors.waits) and who holds the other end.

A process is waiting at an instant when none of its threads runs; it waits on the processes
holding the other end of what its threads sleep on: the writers of a pipe it reads (the
readers of one it writes to), the peer of its socket, the other processes mapping the shared
semaphore it sleeps on. A thread that sleeps on a futex in its process's private memory waits
on a thread of its own; when another thread of the same process sleeps on an object of
another process (a receiver thread reading the server's replies while the main thread waits
on a Condition), that object is what the process waits on. multiprocessing hands both ends
of a pipe to every forked child, so the holders of an end include processes that never use
it: among several, those that used CPU in the window are kept (an idle parent holding a
queue it created is not what its workers wait on), and of those the ones within half the
busiest one's CPU (a heuristic: the busiest holder is the likeliest to post).

Per process: the share of the sampled instants it waited on each set of peers, on a child's
exit (wait4: a parent in join()), in a sleep, or on its own threads. Per role: the edges
summed over the role's processes ("8 workers -> server: 94 % of their time, on a shared
semaphore"), the way harness watch's tables are.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.model.stats import spread_summary
from harness.monitors.waits import WaitSamples

# The signals only the wait reader gives: absent when it read nothing (harness.monitors.blind).
FROM_WAITS = (
    "watch_waits", "watch_waits_procs", "waits_on", "worker_blocked_pct", "client_wait_share", "server_idle_share"
)  # fmt: skip
MIN_ACTIVE_CORES = 0.02  # a holder that used less CPU than this is not who a process waits on
ACTIVE_OF_TOP = 0.5  # of several holders, those within half the busiest one's CPU: the creator of a
# semaphore (the suite's main, on 0.14 cores) holds it beside the server that posts it (0.32)
MIN_EDGE_SHARE = 0.05  # edges under this share of a process's time are left out
VIA = {"pipe": "a pipe", "socket": "a socket", "shm": "a shared semaphore or lock"}
IDLE_BY_DESIGN = ("child", "sleep")  # a parent in join(), a timer: waits nobody can shorten
# a worker woken less often than this is not in a pipeline's loop ... unless it never sleeps at
# all: a worker computing without pause makes no voluntary switch (two hogwild trainers read
# 0.0 wake-ups/s at 100 % compute), so it is dormant only while it also wanted under
# DORMANT_RUNNABLE_CORES of a core (ran or sat runnable: the kernel's schedstat)
DORMANT_HZ = 1.0
DORMANT_RUNNABLE_CORES = 0.05


@dataclass(frozen=True)
class Edge:
    """`waiter` spent `share` of its sampled instants waiting on `peers` through `via`."""

    waiter: int
    peers: tuple[int, ...]  # empty for child / sleep / own threads / unknown
    via: str  # pipe, socket, shm, thread, child, sleep, unknown
    share: float
    objects: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"waiter": self.waiter, "peers": list(self.peers), "via": self.via, "blocked": round(self.share, 4),
                "objects": list(self.objects)}  # fmt: skip


def _other_end(samples: WaitSamples, pid: int, obj: str, writing: bool) -> tuple[int, ...]:
    holders = samples.holders
    if obj.startswith("pipe:"):
        want = "r" if writing else "w"
        found = [p for p, mode in holders.get(obj, {}).items() if want in mode and p != pid]
    elif obj.startswith("socket:"):
        peer = samples.peers.get(obj)
        found = [p for p in holders.get(peer, {}) if p != pid] if peer else []
    elif obj.startswith("shm:"):
        found = [p for p in holders.get(obj, {}) if p != pid]
    else:
        return ()
    cores = {p: samples.cpu_cores(p) for p in found}
    top = max(cores.values(), default=0.0)
    active = [p for p in found if cores[p] >= max(MIN_ACTIVE_CORES, ACTIVE_OF_TOP * top)]
    return tuple(sorted(active or found))


def edges(samples: WaitSamples, pids: list[int] | None = None) -> list[Edge]:
    """Every process's wait edges (share of its sampled instants), strongest first."""
    counts: dict[int, Counter[tuple[tuple[int, ...], str]]] = defaultdict(Counter)
    seen_objects: dict[tuple[int, tuple[int, ...], str], dict[str, None]] = defaultdict(dict)
    seen: Counter[int] = Counter()
    wanted = set(pids) if pids is not None else None
    for _, procs in samples.passes:
        for pid, (running, waits) in procs.items():
            if wanted is not None and pid not in wanted:
                continue
            seen[pid] += 1
            if running or not waits:
                continue
            external: dict[int, None] = {}
            objects: dict[str, None] = {}
            via = None
            for wait in waits:
                for obj in wait.objects:
                    peers = _other_end(samples, pid, obj, wait.write)
                    if peers:
                        external.update(dict.fromkeys(peers))
                        objects[obj] = None
                        via = via or obj.split(":", 1)[0]
            if external:
                key = (tuple(sorted(external)), via or "?")
                counts[pid][key] += 1
                seen_objects[(pid, *key)].update(objects)
                continue
            kinds = [o for w in waits for o in w.objects]
            if "private" in kinds:
                via = "thread"
            elif "child" in kinds:
                via = "child"
            elif all(k == "sleep" for k in kinds):
                via = "sleep"
            else:
                via = "unknown"
            counts[pid][((), via)] += 1
    out = [
        Edge(pid, peers, via, n / seen[pid], tuple(list(seen_objects.get((pid, peers, via), {}))[:8]))
        for pid, counter in counts.items()
        for (peers, via), n in counter.items()
        if n / seen[pid] >= MIN_EDGE_SHARE
    ]
    return sorted(out, key=lambda e: (-e.share, e.waiter))


def blocked_share(samples: WaitSamples, pid: int) -> float | None:
    """Share of the sampled instants none of the process's threads ran."""
    states = [running for _, procs in samples.passes if pid in procs for running, _ in [procs[pid]]]
    return 1.0 - sum(states) / len(states) if states else None


def by_role(found: list[Edge], roles: Mapping[int, str], pids_of_role: Mapping[str, list[int]]) -> list[dict[str, Any]]:
    """Edges summed over roles: for each (waiting role, what it waits on), how many of the
    role's processes wait so, and their shares summarised."""
    groups: dict[tuple[str, str, str], dict[int, float]] = defaultdict(dict)
    peer_pids: dict[tuple[str, str, str], set[int]] = defaultdict(set)
    for edge in found:
        role = roles.get(edge.waiter, "?")
        if edge.peers:
            peer_roles = sorted({roles.get(p, "?") for p in edge.peers})
            target = "+".join(peer_roles)
        else:
            target = {"thread": "its own threads", "child": "a child's exit", "sleep": "a sleep"}.get(edge.via, "?")
        key = (role, target, edge.via)
        groups[key][edge.waiter] = groups[key].get(edge.waiter, 0.0) + edge.share
        peer_pids[key].update(edge.peers)
    out = []
    for (role, target, via), shares in groups.items():
        everyone = pids_of_role.get(role) or list(shares)
        values = [shares.get(p, 0.0) for p in everyone]
        out.append(
            {
                "waiter": role,
                "waiters": len(shares),
                "of": len(everyone),
                "on": target,
                "via": via,
                "peers": sorted(peer_pids[(role, target, via)]),
                "blocked": spread_summary(values),
                "idle_by_design": via in IDLE_BY_DESIGN,
            }
        )
    return sorted(out, key=lambda e: -e["blocked"]["median"] * e["waiters"])


def _short(edge: Edge, roles: Mapping[int, str]) -> str:
    """One process's strongest wait: 'server 812 94 % (a shared semaphore or lock)'."""
    if edge.peers:
        who = " ".join(f"{roles.get(p, '?')} {p}" for p in edge.peers[:2]) + (" ..." if len(edge.peers) > 2 else "")
    else:
        who = {"thread": "its own threads", "child": "a child's exit", "sleep": "a sleep"}.get(edge.via, "?")
    how = f" ({VIA[edge.via]})" if edge.via in VIA else ""
    return f"{who} {100 * edge.share:.0f} %{how}"


def describe(edge: Mapping[str, Any]) -> str:
    """'8 of 8 workers -> server (pid 812): 94 % of their time (median; 90-97 %), through a shared semaphore'."""
    share = edge["blocked"]
    peers = edge["peers"]
    who = f"{edge['waiters']} of {edge['of']} {edge['waiter']}" if edge["of"] > 1 else edge["waiter"]
    if peers:
        named = ", ".join(str(p) for p in peers[:4]) + (f" +{len(peers) - 4}" if len(peers) > 4 else "")
        target = f"{edge['on']} (pid {named})"
    else:
        target = edge["on"]
    spread = f"; {100 * share['min']:.0f}-{100 * share['max']:.0f} %" if share["count"] > 1 else ""
    how = f", through {VIA[edge['via']]}" if edge["via"] in VIA else ""
    return f"{who} -> {target}: {100 * share['median']:.0f} % of the time (median{spread}){how}"


def metrics(
    samples: WaitSamples,
    roles: Mapping[int, str],
    wakeups: Mapping[int, float] | None = None,
    runnable: Mapping[int, float] | None = None,
) -> dict[str, Any]:
    """The record's view: `watch_waits` (the role edges, described); `waits_on` (what the
    workers wait on, for IDLE_WORKERS: the role and pids the largest edge of theirs leads
    to, and its median share); `worker_blocked_pct` (each worker's share of the sampled instants
    it waited on another process of the program: evidence of idleness per worker, measured
    where stacks were not sampled); where workers and one server wait on each other, the
    pipeline's shares PIPELINE_BOUND reads (`client_wait_share`: the workers' median share
    blocked on the server, `server_idle_share`: the server's share blocked on the workers);
    `worker_dormant`: workers that woke less than once a second (`wakeups`, pid -> Hz) while
    they ran or waited to run under DORMANT_RUNNABLE_CORES (`runnable`, pid -> cores):
    evaluation envs between evaluations, or workers never given work. A worker whose demand
    was not read (too many threads, one sample) is not called dormant: its few wake-ups may be
    a computation that never blocks."""
    from harness.watch.roles import IGNORED, SERVER, WORKERS

    program = [pid for pid, role in roles.items() if role not in IGNORED]
    if not samples.passes or not program:
        return {}
    pids_of_role: dict[str, list[int]] = defaultdict(list)
    for pid in program:
        pids_of_role[roles[pid]].append(pid)
    each = edges(samples, program)
    found = by_role(each, roles, pids_of_role)
    out: dict[str, Any] = {"watch_waits": [{**e, "text": describe(e)} for e in found]}
    strongest: dict[int, Edge] = {}
    for edge in each:  # strongest first
        strongest.setdefault(edge.waiter, edge)
    out["watch_waits_procs"] = {str(pid): _short(edge, roles) for pid, edge in strongest.items()}
    blocked_on_peers: dict[str, float] = defaultdict(float)
    for edge in each:
        if edge.peers and roles.get(edge.waiter) == WORKERS:
            blocked_on_peers[str(edge.waiter)] += edge.share
    if blocked_on_peers:  # a worker with no such edge waited on no other process (or under MIN_EDGE_SHARE)
        out["worker_blocked_pct"] = {
            str(p): round(100.0 * blocked_on_peers.get(str(p), 0.0), 1) for p in pids_of_role.get(WORKERS, [])
        }
    workers = [e for e in found if e["waiter"] == WORKERS]
    if workers:
        top = max(workers, key=lambda e: e["blocked"]["median"])
        out["waits_on"] = {"role": top["on"], "pids": top["peers"], "blocked": top["blocked"]["median"], "via": top["via"],
                           "waiters": top["waiters"], "of": top["of"], "idle_by_design": top["idle_by_design"],
                           "text": describe(top)}  # fmt: skip
        to_server = [e for e in workers if e["on"] == SERVER]
        from_server = [e for e in found if e["waiter"] == SERVER and WORKERS in e["on"].split("+")]
        if to_server and pids_of_role.get(SERVER):
            out["client_wait_share"] = to_server[0]["blocked"]["median"]
            out["server_idle_share"] = from_server[0]["blocked"]["median"] if from_server else 0.0
    if wakeups is not None and runnable is not None:
        dormant = [
            p for p in pids_of_role.get(WORKERS, [])
            if wakeups.get(p, DORMANT_HZ) < DORMANT_HZ and runnable.get(p, DORMANT_RUNNABLE_CORES) < DORMANT_RUNNABLE_CORES
        ]  # fmt: skip
        if dormant:
            out["worker_dormant"] = sorted(dormant)
    return out
