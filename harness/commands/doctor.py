"""`harness doctor`: this machine's facts and a short noise reading, with what they mean for
the smallest difference worth trusting. The reading is kept as <out>/doctor.json; sweeps into
the same results directory copy it into run.json while it is fresh (harness.running.execute)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from harness.commands import options
from harness.errors import UserError
from harness.model.numbers import readable

SECONDS_MIN, SECONDS_MAX = 2.0, 600.0
STEAL_WARN_PCT = 2.0


@options.command(epilog=options.exit_codes({0: "the reading taken and kept"}))
def doctor(
    seconds: float = typer.Option(20.0, "--seconds", help="length of the noise reading (2-600 s)"),
    out: Path = options.OutOpt,
    json_: bool = typer.Option(False, "--json", help="print the reading as JSON"),
) -> int:
    """This machine's facts (governor, load, steal, SMT, isolated CPUs, GPUs) and how noisy it is."""
    import socket

    from harness.monitors import machine
    from harness.report.terminal import console_for_stdout
    from harness.running import noise
    from harness.running.metadata import gpu_info
    from harness.runs.files import write_json_atomic
    from harness.runs.store import utc_now

    if not SECONDS_MIN <= seconds <= SECONDS_MAX:
        raise UserError(f"--seconds {seconds:g}: allowed {SECONDS_MIN:g} to {SECONDS_MAX:g}")
    before = machine.cpu_times()
    found = noise.reading(seconds)
    facts = {**machine.facts(), "steal_pct": machine.steal_pct(before, machine.cpu_times()), **gpu_info(),
             **counting()}  # fmt: skip
    result = {"measured_at": utc_now(), "hostname": socket.gethostname(), "facts": facts, **found}
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / noise.DOCTOR_FILE, result)
    if json_:
        print(json.dumps(result, indent=2, default=str))
        return 0
    console = console_for_stdout()
    console.print("[bold]this machine[/bold]")
    for name, value, what in assess(facts):
        console.print(f"  {name}: {value}  [dim]({what})[/dim]", highlight=False)
    console.print(f"[bold]noise ({seconds:g} s reading)[/bold]")
    for line in meaning(found):
        console.print(f"  {line}", highlight=False)
    print(f"kept in {out / noise.DOCTOR_FILE}: sweeps into {out} copy it into run.json for {noise.FRESH_S // 3600} h")
    return 0


def counting() -> dict[str, Any]:
    """What `--measure instructions` can count with here: valgrind (its version), hardware counters."""
    import shutil
    import subprocess

    from harness.count import hardware

    valgrind = shutil.which("valgrind")
    version = None
    if valgrind:
        try:
            version = subprocess.run([valgrind, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            version = None
    told = hardware.available()
    return {"valgrind": version, "hardware_counters": told.usable, "hardware_counters_said": told.said}


def assess(facts: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(fact, value, what it means) for each fact."""
    rows = []
    cores = facts["usable_cores"]
    load = facts.get("load_avg_1_5_15")
    if load:
        busy = load[0] >= cores
        meaning = (
            f"more runnable threads than the {cores} usable cores: other work shares the CPUs, rates will wander"
            if busy
            else "below the core count"
        )
        rows.append(("load average (1, 5, 15 min)", ", ".join(f"{v:.2f}" for v in load), meaning))
    governors = facts.get("governors")
    if governors is None:
        rows.append(("CPU governor", "not exposed", "no cpufreq here (a VM or container): the host decides the clock"))
    else:
        fixed = set(governors) == {"performance"}
        rows.append(
            (
                "CPU governor",
                ", ".join(f"{g} x{n}" for g, n in governors.items()),
                "fixed clock" if fixed else "the clock follows the load: set `performance` for steadier numbers",
            )
        )
    steal = facts.get("steal_pct")
    if steal is not None:
        meaning = (
            "a hypervisor gave CPU time to other guests during the reading: expect noise"
            if steal >= STEAL_WARN_PCT
            else "little or none taken by a hypervisor"
        )
        rows.append(("steal time during the reading", f"{steal:.1f} %", meaning))
    smt = facts.get("smt")
    rows.append(
        (
            "SMT (hyper-threads)",
            {True: "on", False: "off", None: "unknown"}[smt],
            "two logical CPUs share a core: workers on siblings slow each other" if smt else "one thread per core",
        )
    )
    isolated = facts.get("isolated_cpus")
    rows.append(
        (
            "isolated CPUs",
            isolated or ("none" if isolated == "" else "not exposed"),
            "the scheduler keeps other work off them" if isolated else "every CPU is shared with the rest of the system",
        )
    )
    quota = facts.get("cpu_quota")
    rows.append(
        (
            "cgroup CPU quota",
            readable(quota) if quota else "none",
            f"this process may use {readable(quota)} CPUs" if quota else "no limit",
        )
    )
    if "valgrind" in facts:
        rows.append(
            (
                "valgrind (callgrind)",
                facts["valgrind"] or "not found",
                "harness ab --measure instructions counts under it"
                if facts["valgrind"]
                else "install the package `valgrind` for harness ab --measure instructions",
            )
        )
        rows.append(
            (
                "hardware instruction counters",
                "yes" if facts["hardware_counters"] else "none",
                "--count-with perf counts at native speed (not yet tried on such a machine)"
                if facts["hardware_counters"]
                else f"{facts['hardware_counters_said']}: counts run under valgrind",
            )
        )
    gpus = facts.get("gpus") or []
    rows.append(
        (
            "GPUs (NVML)",
            "; ".join(f"{g['name']} ({readable(g['memory_total_mb'])} MB)" for g in gpus) or "none",
            facts.get("gpu_reason") or f"driver {facts.get('gpu_driver')}",
        )
    )
    return rows


def meaning(reading: dict[str, Any]) -> list[str]:
    between = reading["between_processes"]
    within = reading["within_process"]
    trust = reading["trust_pct_by_repeats"]
    lines = [
        f"within one process: short runs of the same work vary by {readable(within['slice_spread_pct'], 3)} % "
        f"(sd/mean of {within['slices']} slices), 1 s windows by {readable(within['window_1s_spread_pct'], 3)} %",
        f"between fresh processes (what separates two repeats of a cell): {readable(between['spread_pct'], 3)} % "
        f"over {between['processes']} processes",
    ]
    worth = ", ".join(f"{readable(pct, 3)} % with {n} repeat{'s' if n != '1' else ''} a side" for n, pct in trust.items())
    lines.append(
        f"differences worth trusting here: above {worth}; smaller ones can be this machine's noise "
        "(95 % of same-code comparisons drawn from this reading stay within them)"
    )
    return lines
