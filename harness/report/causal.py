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
ENDED = {  # why the rounds ended (harness.causal.experiment)
    "narrow": "every interval narrow enough",
    "futile": "no interval could settle in the budget left, were the rounds to come like these",
    "budget": "budget spent",
}
MEANING = {
    "critical": "on the critical path: the program goes as fast as it does",
    "slack": "has slack: speeding it up buys nothing",
    "competes": "slowing it speeds the program up: it competes for cores, locks or the GIL",
}


def _span(low: float, high: float) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return "[-inf, inf]"
    return f"[{low:+.2f}, {high:+.2f}]"


def rows(result: dict[str, Any], faster: float = 0.1) -> list[list[str]]:
    out = []
    util = result.get("utilisation_cores") or {}
    # what the stops took of each group's CPU (older results: the share it was held stopped)
    achieved = result.get("dose") or result.get("achieved_fraction") or {}
    kept = result.get("cpu_kept") or {}
    measured = sorted(result.get("sensitivity") or [], key=lambda s: -_finite(s.get("estimate")))
    for s in measured:
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
                f"{est:+.2f}" if math.isfinite(est) else "-",
                _span(low, high),
                str(s["n"]),
                gain,
                s["verdict"],
            ]
        )
    for j in result.get("unmeasured") or []:
        group = j["group"]
        used = f"{util[group]:.2f}" if group in util else "-"
        out.append(
            [group, str(len(result["groups"].get(group) or [])), used, "-", "-", "-", "-", "0", "-", j["verdict"]]
        )
    return out


def _finite(value: float | None) -> float:
    return value if value is not None and math.isfinite(value) else -math.inf


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
    change: one line per critical group, one per group that competes; none while a caveat
    stands against the whole experiment (its verdicts are all unknown)."""
    if result.get("caveats"):
        return [f"no bottleneck named: {result['caveats'][0]}"]
    lines = []
    edges = result.get("waits") or []
    for s in sorted(result.get("sensitivity") or [], key=lambda s: -_finite(s["estimate"])):
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
        return f"each process of a group owes {opts['fraction'] / (1 - opts['fraction']):.2g} s of running per s it ran"
    return f"each group stopped {opts['fraction']:g} of every {1000 * opts['cycle_s']:g} ms"


def _periods(result: dict[str, Any]) -> str:
    """The periods the cadence asked for: one length, or the range Coz's rule moved them in."""
    lengths = (result.get("cadence") or {}).get("periods_s") or [result["options"]["period_s"]]
    low, high = min(lengths), max(lengths)
    return f"{low:.2g} s periods" if low == high else f"{low:.2g}-{high:.2g} s periods"


def _cadence(result: dict[str, Any]) -> str:
    every = (result.get("cadence") or {}).get("cadence_s")
    return f", reported every {every:.2g} s" if every else ""


def render_causal(
    result: dict[str, Any], console: Console | None = None, remedy: Callable[[str, str], str] | None = None
) -> None:
    console = console or console_for_stdout()
    opts = result["options"]
    title = (
        f"causal profile: {result['rounds']} rounds of {_periods(result)}, {_how(opts)}; "
        f"throughput = {result.get('throughput') or result['counter']} per s{_cadence(result)} "
        f"({result['free_rate']:.4g} with nothing slowed)"
        if result.get("free_rate")
        else "causal profile: no rate was measured"
    )
    table = Table(title=title, title_justify="left")
    for col in ("group", "procs", "cores", "dose", "CPU kept", "sensitivity", "95 % interval", "rounds",
                "10 % faster buys", "verdict"):  # fmt: skip
        table.add_column(col, justify="left" if col in ("group", "verdict", "95 % interval") else "right")
    for row in rows(result):
        table.add_row(*(escape(x) for x in row), style=STYLE.get(row[-1]))
    console.print(table)

    def say(text: str) -> None:
        console.print(f"  {text}", markup=False, highlight=False)

    for caveat in result.get("caveats") or []:
        say(f"unknown, all: {caveat}")
    for judged in [*(result.get("sensitivity") or []), *(result.get("unmeasured") or [])]:
        if judged["verdict"] == "unknown" and not result.get("caveats"):
            say(f"{judged['group']}: unknown: {judged['reason']}")
    for verdict in dict.fromkeys(r[-1] for r in rows(result)):
        if verdict in MEANING:
            say(f"{verdict}: {MEANING[verdict]}")
    for sens in result.get("sensitivity") or []:
        if sens["low"] > 1.0:
            say(
                f"{sens['group']}: a sensitivity above 1 ({sens['estimate']:+.2f}): its stops cost more than that much "
                "slower code would: each stalls a partner that waits on it for the whole stop (lock-step, no buffer "
                "between them); --mode debt stops it only for what its CPU owes, or use a shorter --cycle-ms"
            )
    for edge in result.get("waits") or []:
        if edge["blocked"]["median"] >= 0.05:
            say(f"waits: {describe(edge)}")
    found = result.get("proxy")
    if found:
        how = (
            "--io-counter"
            if found.get("chosen") == "user"
            else f"chosen: {found.get('counter')} too sparse for the budget"
        )
        halves = found.get("halves")
        agree = ", ".join("-" if h is None else f"{h:.3g}" for h in halves) if halves else "not enough reports"
        say(f"throughput: read+write calls of {found['group']} ({how}); calls per {found.get('counter')} the program "
            f"logged, first and second half: {agree}")  # fmt: skip
    for line in conclusion(result, remedy):
        say(line)
    cost = result["cost"]
    ended = ENDED.get(result["reason"], "budget spent")
    say(
        f"{result['wall_s']:.0f} s in all (launch {result['launch_s']:.1f} s, warm-up {result['warmup_s']:.1f} s; "
        f"{ended}); the stopper used {cost['stopper_cpu_pct']:.1f} % of a core, the harness "
        f"{cost['harness_cpu_pct']:.1f} %"
    )
