"""BUSY_WAIT (warning): processes that burn CPU while they wait, or spend it on overhead.

Five symptoms, first match wins, each with its own remedy (the suite's, naming its knobs,
else a generic one):
- `poll`: `<role>_wait_cpu_s` against `<role>_wait_s` (or `wait_s`): CPU seconds burned per
  second spent waiting at least CPU_PER_WAIT_S, over at least MIN_WAIT_S of waiting;
- `publish`: the `publish_share` signal (share of the time spent publishing) >= PUBLISH_SHARE;
- `poll` again: the `wait_share` signal >= WAIT_SHARE while the process tree keeps
  BUSY_FRACTION of its cores busy (`cpu_util_mean`, `cpu_procs_peak`);
- `spin`: consumers that never wait but re-process stale data: the `reuse_ratio` signal >=
  SPIN_REUSE_RATIO with `consumer_cpu_s` >= SPIN_CPU_FACTOR x `producer_cpu_s` (learners
  re-training on old samples as fast as they can, starving the actor that feeds them);
- `sleep`: a sleep-poll loop seen from outside (harness watch): the `sleep_share` signal
  (share of a thread's sampled time in sleep()) >= SLEEP_SHARE while that thread wakes
  `wakeups_hz` >= WAKEUPS_HZ times a second (a 1 ms poll wakes up to 1000 times; a
  blocking get wakes once per item, a 0.5 s progress sleep twice).
"""

from __future__ import annotations

from typing import Any

from harness.diagnosis.findings import Finding, fmt
from harness.diagnosis.needs import STACKS, Needs
from harness.runs.record import CellGroup
from harness.runs.view import RunView

RULE = "BUSY_WAIT"
NEEDS = Needs(instruments=(STACKS,))  # its sleep-poll symptom reads harness watch's stacks
CPU_PER_WAIT_S = 0.05  # a waiting process burning >= 5 % of a core polls instead of blocking
MIN_WAIT_S = 0.5
WAIT_SHARE = 0.5
BUSY_FRACTION = 0.8
PUBLISH_SHARE = 0.2  # a fifth of the time spent publishing weights: publish less often
SPIN_REUSE_RATIO = 2.0  # items consumed per item produced
SPIN_CPU_FACTOR = 2.0  # consumer CPU over the producer's
# a tenth of the sampled time inside sleep() ... (a 1 ms poll loop measured 0.17-1.0 of its
# thread's samples on this machine, its blocking control 0; at 0.2 a busy moment missed it)
SLEEP_SHARE = 0.1
WAKEUPS_HZ = 200.0  # ... while waking this often: a poll loop with a sleep of 5 ms or less
REMEDIES = {
    "busy_wait.poll": "block on an event, condition or queue instead of polling",
    "busy_wait.publish": "publish less often or publish only what changed",
    "busy_wait.spin": "consume only as new data arrives, so the producer keeps its CPU",
    "busy_wait.sleep": (
        "block on the queue, event or condition (q.get(timeout=...), Event.wait) instead of sleeping and "
        "polling: every wake-up costs a context switch and the GIL, and the data waits up to a sleep"
    ),
}

Symptom = tuple[str, str, dict[str, Any]]  # (remedy key, text, evidence)


def _polling(cell: CellGroup) -> Symptom | None:
    names = cell.metric_names()
    wait_signal = cell.vocabulary.signal("wait_s")
    for cpu_name in sorted(n for n in names if n.endswith("wait_cpu_s")):
        role = cpu_name[: -len("wait_cpu_s")]
        wait_name = f"{role}wait_s" if f"{role}wait_s" in names else wait_signal
        wait, cpu = cell.median(wait_name), cell.median(cpu_name)
        if wait is None or cpu is None or wait < MIN_WAIT_S:
            continue
        per_s = cpu / wait
        if per_s >= CPU_PER_WAIT_S:
            who = role.rstrip("_") + "s" if role else "processes"
            text = f"{who} burned {fmt(cpu)} CPU s in {fmt(wait)} s of waiting ({100 * per_s:.0f} % of a core)"
            return "busy_wait.poll", text, {wait_name: wait, cpu_name: cpu, "cpu_per_wait_s": per_s}
    return None


def _publishing(cell: CellGroup) -> Symptom | None:
    found = cell.signals("publish_share")
    (publish,) = found.values()
    if publish is None or publish < PUBLISH_SHARE:
        return None
    return "busy_wait.publish", f"{100 * publish:.0f} % of the time goes to publishing weights", found


def _busy_waiting(cell: CellGroup, cores: int) -> Symptom | None:
    found = cell.signals("wait_share", "cpu_util_mean", "cpu_procs_peak")
    share, util, procs = found.values()
    if share is None or util is None or not procs:
        return None
    busy = util / 100.0 / min(procs, cores)
    if share < WAIT_SHARE or busy < BUSY_FRACTION:
        return None
    text = f"processes wait {100 * share:.0f} % of the time yet keep {100 * busy:.0f} % of their cores busy"
    return "busy_wait.poll", text, found | {"busy_fraction": busy}


def _spinning(cell: CellGroup) -> Symptom | None:
    found = cell.signals("reuse_ratio", "consumer_cpu_s", "producer_cpu_s")
    ratio, consumer, producer = found.values()
    if ratio is None or consumer is None or not producer:
        return None
    if ratio < SPIN_REUSE_RATIO or consumer < SPIN_CPU_FACTOR * producer:
        return None
    text = (
        f"consumers spin on stale data: {next(iter(found))} {ratio:.1f} and {fmt(consumer)} CPU s against the "
        f"producer's {fmt(producer)}"
    )
    return "busy_wait.spin", text, found


def _sleep_polling(cell: CellGroup) -> Symptom | None:
    words = cell.vocabulary
    share_name, wake_name = words.signal("sleep_share"), words.signal("wakeups_hz")
    share, wakeups = cell.median(share_name), cell.median(wake_name)
    if share is None or wakeups is None or share < SLEEP_SHARE or wakeups < WAKEUPS_HZ:
        return None
    where = cell.first("sleep_process")
    site = cell.first("sleep_site")
    text = (
        f"{where or 'a thread'} sleeps {100 * share:.0f} % of its sampled time and wakes {wakeups:.0f} times a "
        f"second{f' (at {site})' if site else ''}: a sleep-poll loop"
    )
    evidence: dict[str, Any] = {share_name: share, wake_name: wakeups}
    if site:
        evidence["sleep_site"] = site
    return "busy_wait.sleep", text, evidence


def check(view: RunView) -> list[Finding]:
    out = []
    for cell in view.cells:
        found = (
            _polling(cell) or _publishing(cell) or _busy_waiting(cell, view.cores) or _spinning(cell)
            or _sleep_polling(cell)
        )  # fmt: skip
        if found is None:
            continue
        key, symptom, evidence = found
        ctx_vol = cell.median("cpu_ctx_vol")
        if ctx_vol is not None:
            evidence["cpu_ctx_vol"] = ctx_vol
        remedy = cell.vocabulary.remedy(key, REMEDIES[key])
        out.append(Finding(RULE, "warning", [cell.id], f"{symptom}: {remedy}", evidence | {"remedy_key": key}))
    return out
