"""A causal experiment's result (causal.json, harness.causal.experiment) as a terminal table:
each group's sensitivity with its interval, what speeding it up would buy, and the cost."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.report.terminal import console_for_stdout
from harness.watch.waits import describe

STYLE = {"critical": "bold", "competes": "yellow"}
GIVEN_BACK = 0.2  # kept this much more CPU than 1 - f: the stops were given back
PHASED = 0.1  # this share of free periods without progress: the program works in phases
WAITING = 0.5  # a group waiting on another process this much of its time has slack, not a lack of cores
MEANING = {
    "critical": "on the critical path: the program goes as fast as it does",
    "slack": "has slack: speeding it up buys nothing",
    "competes": "slowing it speeds the program up: it competes for cores, locks or the GIL",
    "between": "partly limiting (or the interval is still wide)",
    "unknown": "too few rounds for an interval",
}


def _span(low: float, high: float) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return "[-inf, inf]"
    return f"[{low:+.2f}, {high:+.2f}]"


def rows(result: dict[str, Any], faster: float = 0.1) -> list[list[str]]:
    out = []
    util = result.get("utilisation_cores") or {}
    achieved = result.get("achieved_fraction") or {}
    kept = result.get("cpu_kept") or {}
    for s in sorted(result.get("sensitivity") or [], key=lambda s: -(s.get("estimate") or -math.inf)):
        group = s["group"]
        est, low, high = s["estimate"], s["low"], s["high"]
        gain = "-"
        if math.isfinite(low) and math.isfinite(high):
            gain = f"+{100 * faster * max(est, 0):.1f} % [{100 * faster * max(low, 0):.1f}, {100 * faster * max(high, 0):.1f}]"
        out.append(
            [
                group,
                str(len(result["groups"].get(group) or [])),
                f"{util[group]:.2f}" if group in util else "-",
                f"{achieved[group]:.2f}" if group in achieved else "-",
                f"{kept[group]:.2f}" if group in kept else "-",
                f"{est:+.2f}",
                _span(low, high),
                str(s["n"]),
                gain,
                s["verdict"],
            ]
        )
    return out


# which remedy of the suite's (Vocabulary.remedies) a critical group's name calls for, and the
# generic advice where the suite has none
REMEDY_OF = {
    "server": (
        "pipeline.server_bound",
        "more compute for the server: threads, batches computed at once, a faster device",
    ),
    "workers": ("pipeline.worker_bound", "more workers where cores are free, or less work per item in each"),
}
COMPETES = "it competes for cores, locks or the GIL: block instead of polling (see BUSY_WAIT), or give it fewer cores"


def conclusion(result: dict[str, Any], remedy: Callable[[str, str], str] | None = None) -> list[str]:
    """The bottleneck named by its measured sensitivity, the wait edges into it, and what to
    change: one line per critical group, one per group that competes."""
    lines = []
    edges = result.get("waits") or []
    for s in sorted(result.get("sensitivity") or [], key=lambda s: -s["estimate"]):
        group, verdict = s["group"], s["verdict"]
        if verdict not in ("critical", "competes") or group.startswith("("):
            continue
        span = f"{s['estimate']:+.2f} [{s['low']:+.2f}, {s['high']:+.2f}]"
        if verdict == "critical":
            into = [describe(e) for e in edges if group in e["on"].split("+") and e["blocked"]["median"] >= 0.1]
            symptom, default = REMEDY_OF.get(
                group, ("", "see where its time goes (harness watch), and make it cheaper")
            )
            advice = remedy(symptom, default) if remedy and symptom else default
            why = f"; {'; '.join(into)}" if into else ""
            lines.append(f"bottleneck: {group}, sensitivity {span}{why}: {advice}")
        else:
            lines.append(f"competes: {group}, sensitivity {span}: slowing it speeds the program up; {COMPETES}")
    return lines


def _how(opts: dict[str, Any]) -> str:
    if opts.get("mode", "duty") == "debt":
        return f"each process of a group stopped {opts['fraction'] / (1 - opts['fraction']):.2g} s per s it ran"
    return f"each group stopped {opts['fraction']:g} of every {1000 * opts['cycle_s']:g} ms"


def render_causal(
    result: dict[str, Any], console: Console | None = None, remedy: Callable[[str, str], str] | None = None
) -> None:
    console = console or console_for_stdout()
    opts = result["options"]
    title = (
        f"causal profile: {result['rounds']} rounds of {opts['period_s']:g} s periods, {_how(opts)}; "
        f"throughput = {result.get('throughput') or result['counter']} per s "
        f"({result['free_rate']:.4g} with nothing slowed)"
        if result.get("free_rate")
        else "causal profile: no rate was measured"
    )
    table = Table(title=title, title_justify="left")
    for col in ("group", "procs", "cores", "f held", "CPU kept", "sensitivity", "95 % interval", "rounds",
                "10 % faster buys", "verdict"):  # fmt: skip
        table.add_column(col, justify="left" if col in ("group", "verdict", "95 % interval") else "right")
    for row in rows(result):
        table.add_row(*(escape(x) for x in row), style=STYLE.get(row[-1]))
    console.print(table)
    for verdict in dict.fromkeys(r[-1] for r in rows(result)):
        console.print(f"  {verdict}: {MEANING.get(verdict, '')}", markup=False, highlight=False)
    opts_f = result["options"]["fraction"]
    verdicts = {s["group"]: s["verdict"] for s in result.get("sensitivity") or []}
    waiting = {}  # the share of its time each group waits on another process (it has slack then)
    for edge in result.get("waits") or []:
        if edge["peers"]:
            waiting[edge["waiter"]] = max(waiting.get(edge["waiter"], 0.0), edge["blocked"]["median"])
    for group, share in (result.get("cpu_kept") or {}).items():
        busy = (result.get("utilisation_cores") or {}).get(group, 0) >= 0.2
        if (
            share > 1 - opts_f + GIVEN_BACK
            and busy
            and verdicts.get(group) in ("between", "critical")
            and (waiting.get(group, 0.0) < WAITING)
        ):
            console.print(
                f"  {group}: stopped {opts_f:g} of its time, it kept {share:.2f} of its CPU and waits on no other "
                "process: the cores its stops freed went to its other processes or the scheduler gave them back "
                "(more runnable threads than cores), so its sensitivity understates what faster code would buy; "
                "the cores are the limit",
                markup=False, highlight=False,
            )  # fmt: skip
    if result.get("idle"):
        console.print(
            f"  idle: {', '.join(result['idle'])}: under 1 % of a core with nothing slowed, so never stopped in debt mode "
            "(slower code of theirs costs nothing); not measured",
            markup=False, highlight=False,
        )  # fmt: skip
    idle, free = result.get("idle_free_periods") or (0, 0)
    if free and idle >= PHASED * free:
        console.print(
            f"  {idle} of {free} periods with nothing slowed counted no progress: the program works in phases longer "
            f"than a period ({opts['period_s']:g} s; a rollout, then an update): the slowed periods that fell in a "
            "phase without progress make the sensitivities too high; use a --period longer than a phase",
            markup=False, highlight=False,
        )  # fmt: skip
    for sens in result.get("sensitivity") or []:
        if sens["low"] > 1.0:
            console.print(
                f"  {sens['group']}: a sensitivity above 1 ({sens['estimate']:+.2f}): its stops cost more than that much "
                "slower code would: each stalls a partner that waits on it for the whole stop (lock-step, no buffer "
                "between them); --mode debt stops it only for what its CPU owes, or use a shorter --cycle-ms",
                markup=False, highlight=False,
            )  # fmt: skip
    for edge in result.get("waits") or []:
        if edge["blocked"]["median"] >= 0.05:
            console.print(f"  waits: {describe(edge)}", markup=False, highlight=False)
    check = result.get("io_check")
    if check:
        halves = ", ".join("-" if h is None else f"{h:.2f}" for h in check["calls_per_unit"])
        console.print(f"  the calls counted per {check['counter']} the program logged, first and second half: {halves}",
                      markup=False, highlight=False)  # fmt: skip
    for line in conclusion(result, remedy):
        console.print(f"  {line}", markup=False, highlight=False)
    cost = result["cost"]
    ended = "every interval narrow enough" if result["reason"] == "narrow" else "budget spent"
    console.print(
        f"  {result['wall_s']:.0f} s in all (launch {result['launch_s']:.1f} s, warm-up {result['warmup_s']:.1f} s; "
        f"{ended}); the stopper used {cost['stopper_cpu_pct']:.1f} % of a core, the harness "
        f"{cost['harness_cpu_pct']:.1f} %",
        markup=False,
        highlight=False,
    )
