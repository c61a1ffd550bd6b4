"""A tune's result (tune.json, harness.tune) for people: the trail in the terminal, and a
section of report.html, both from the same rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.markup import escape
from rich.table import Table

from harness.report.terminal import console_for_stdout
from harness.tune.result import TIME_TO_TARGET, move_said

HEADERS = ("step", "incumbent", "limited by", "tried", "why", "A/B (challenger / incumbent)", "s")
RACE_HEADERS = (*HEADERS[:5], "race (incumbent's time / challenger's)", "s")


def headers(doc: dict[str, Any]) -> tuple[str, ...]:
    """The trail's columns: a race's ratio reads the other way up from an A/B's (time, not rate)."""
    return RACE_HEADERS if (doc.get("options") or {}).get("objective") == TIME_TO_TARGET else HEADERS


def trail_rows(doc: dict[str, Any]) -> list[list[str]]:
    """One row per trial (a step with none: one row saying so), the adopted one marked; a
    step whose single moves all lost has a row for the moves of two knobs read after them
    (or why none were), before the ones of them A/B'd."""
    rows = []
    for step in doc.get("steps") or []:
        incumbent = " ".join(f"{k}={v}" for k, v in step["incumbent"].items())
        limit = (step.get("limit") or {}).get("said") or "-"
        if step.get("causal_skipped"):
            limit = f"{limit} ({step['causal_skipped']})"
        trials = step.get("trials") or []
        pairs = step.get("pairs")
        first_pair = (pairs or {}).get("first_trial", len(trials))  # the pairs' A/Bs follow their readings
        lines: list[list[str]] = []
        for i, trial in enumerate(trials):
            if pairs and i == first_pair:
                lines.append(pairs_row(pairs))
            duel = trial.get("duel") or {}
            adopted = " (adopted)" if step.get("adopted") == i else ""
            lines.append(
                [
                    f"{move_said(trial['knob'], trial['value'])}{adopted}",
                    why_of(trial),
                    duel.get("said", "not run"),
                    f"{duel.get('seconds', 0):.0f}",
                ]
            )
        if pairs and first_pair == len(trials):
            lines.append(pairs_row(pairs))
        if not lines:
            lines.append(["-", "-", "-", f"{step.get('seconds', 0):.0f}"])
        for i, line in enumerate(lines):
            head = [str(step["index"]), incumbent, limit] if i == 0 else ["", "", ""]
            rows.append([*head, *line])
    return rows


def pairs_row(pairs: dict[str, Any]) -> list[str]:
    """The moves of two knobs read after a step's single moves all lost (Step.pairs)."""
    return ["moves of two knobs", "no single move won", pairs["said"], f"{pairs.get('seconds', 0):.0f}"]


def why_of(trial: dict[str, Any]) -> str:
    """Why the trial was tried, with the screen's readings that chose its value (if any)."""
    screen = trial.get("screen")
    if not screen:
        return str(trial["why"])
    return f"{trial['why']} ({screen['said']}; {screen.get('seconds', 0):.0f} s)"


def plan_lines(doc: dict[str, Any]) -> list[str]:
    """The plan, a whole screen's rungs and its leaders' A/Bs (harness.tune.plan, .halving)."""
    made = doc.get("plan")
    if not made:
        return []
    lines = [f"plan: {made['said']}"]
    screened = doc.get("halving") or {}
    for rung in screened.get("rungs") or []:
        if rung.get("said"):
            lines.append(f"rung {rung['index']}: {rung['said']}")
        if rung["index"] == 0 and screened.get("drift"):
            lines.append(f"  drift: {screened['drift']}; a reading's noise taken as {100 * screened['noise_sd']:.1f} %")
    for duel in screened.get("duels") or []:
        lines.append(f"A/B of leaders: {duel.get('said', duel.get('decision'))}")
    if screened.get("stopped"):
        lines.append(f"halving stopped: {screened['stopped']}")
    return lines


def summary_lines(doc: dict[str, Any]) -> list[str]:
    lines = [*plan_lines(doc), f"result: {doc.get('conclusion') or '-'}"]
    if doc.get("sure") and doc["sure"] not in (doc.get("conclusion") or ""):
        lines.append(f"how sure: {doc['sure']}")
    first = (doc.get("steps") or [{}])[0]
    if first.get("pilot_s") is not None:
        target, reached = (doc.get("options") or {}).get("target"), first.get("target_s")
        lines.append(
            f"the start reached {target} in {reached:.2f} s (one run)"
            if reached is not None
            else f"the start missed {target} within its cap (one run)"
        )
    scaling = doc.get("scaling")
    if scaling:
        lines.append(f"the worker axis ({scaling.get('knob')}): {scaling.get('said')}")
    if doc.get("machine_limit"):
        lines.append(f"the machine was the limit: {doc['machine_limit']}")
    if doc.get("ended_by"):
        lines.append(f"the search ended: {doc['ended_by']} after {doc.get('elapsed_s', 0):.0f} s")
    if (doc.get("plan") or {}).get("against_grid"):
        lines.append(doc["plan"]["against_grid"])
    lines.append(f"run with: {doc['command']}")
    return lines


def render_tune(doc: dict[str, Any], print_line: Callable[[str], None] = print) -> None:
    rows = trail_rows(doc)
    if rows:  # a space screened whole takes no step: its rungs are in the summary, not an empty table
        table = Table(title="harness tune: the trail", show_lines=False)
        for header in headers(doc):
            table.add_column(header)
        for row in rows:
            table.add_row(*(escape(cell) for cell in row))
        console_for_stdout().print(table)
    for line in summary_lines(doc):
        print_line(line)
    print_line("as a spec:")
    print_line(doc["spec"])


def html_section(
    doc: dict[str, Any], table: Callable[[list[str], list[list[str]]], str], esc: Callable[[str], str]
) -> str:
    """report.html's tune section (the page's own table and escaping helpers)."""
    parts = ['<section id="tune"><h2>Tune</h2>']
    parts += [f"<p>{esc(line)}</p>" for line in summary_lines(doc)]
    parts.append(f"<pre>{esc(doc['spec'])}</pre>")
    rows = trail_rows(doc)
    if rows:
        parts.append(table(list(headers(doc)), rows))
    parts.append("</section>")
    return "\n".join(parts)
