"""The A/B gate measured: how often does `harness ab` call a planted slowdown a regression,
how often does it call identical code one, and how long does it take to decide?

Each cell gets a scratch clone of this repository (shared objects, nothing pushed) with four
commits on top of HEAD: the base (HEAD itself), an empty commit (identical code on a
different worktree), and commits that plant a slowdown of 10 % and 5 % in the cell's own
code: for the synthetic spin cell, each work unit does 1.10 (1.05) times the loop steps; for
mccfr (processes, 2 workers), each worker burns 10 % (5 %) more CPU time after every batch,
timed by its thread's CPU clock so that a SIGSTOP cannot shorten it. Every trial is one
`python -m harness.cli ab BASE ARM` run exactly as a user runs it (worktrees, slicing,
the sequential test, its budget), with a fresh seed; the arms take turns in a random order
within each round, so a change of machine load over the hours hits every arm alike.

Per cell and arm it reports: regression (recall for a planted slowdown, false alarms for
identical code), ok, undecided, the median time to a decision (A/B time, the first launch of
each side excluded, as the budget counts it) and the median estimate of candidate/base.
Raw results (every trial's ab.json cell, slices included) go to --save, written after every
trial, so an interrupted campaign keeps what it measured.

The issue's campaign (hours: run it on an idle machine):

    python benchmarks/gate_trial.py --trials 40 --save benchmarks/data/ab_trial-DATE.json

Its smoke test (2 trials per arm, short budgets, a few minutes):

    python benchmarks/gate_trial.py --trials 2 --budgets 1.10:40,1.05:40,1.0:40 \
        --save results/ab_trial-smoke.json

Re-analysis of saved files (the figures the docs quote; several files also together):
python benchmarks/gate_trial.py --analyze FILE [FILE ...]

A campaign longer than one sitting: run it again with --resume and the same --save file; it
adds rounds until --trials rounds are in the file (each trial names its session, and the
file lists every session's start and commit).

`--replay FILE [FILE ...]` predicts variants from saved blocks (no runs): each trial's own
blocks redrawn with replacement through the harness's sequential test, at other
`--tolerances` or with `--first-pair-only` (one measured pair a block). A prediction: the
docs quote it as one, next to the campaign it is checked against.

`--simulate` models the campaign instead (no runs): the unit test's model of the slicer's
output (tests/harness/test_ab_sequential.py: AR(1) machine phases, slice noise, a layout
bias per process) at three noise levels, judged by the harness's own sequential test.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parent.parent

# cell -> (harness ab arguments, file to patch, the line the patch anchors on, the patch)
PLANTS = {
    "spin": (
        ["--suite", "synthetic", "--set", "kind=spin", "--set", "workers=1"],
        "suites/synthetic/spin.py",
        "    steps = max(1, round(params.unit_size * params.slowdown))\n",
        "    steps = max(1, round(params.unit_size * params.slowdown * {factor}))  # planted by gate_trial\n",
    ),
    "mccfr": (
        ["--suite", "mccfr", "--set", "backend=processes", "--set", "workers=2", "--set", "batch_size=1000"],
        "suites/mccfr/worker.py",
        "        compute_s = time.perf_counter() - started\n",
        "        _burn = time.thread_time() + ({factor} - 1) * (time.perf_counter() - started)  # planted by gate_trial\n"
        "        while time.thread_time() < _burn:\n"
        "            pass\n"
        "        compute_s = time.perf_counter() - started\n",
    ),
    # a user's own repository: a program that only logs `Iteration N (X iter/s)`, each
    # iteration 2 ms of CPU (README, "Gate your own repository in CI"; tests/harness/test_ab_program.py)
    "program": (
        ["--", "python", "train.py"],
        "train.py",
        "COST_S = 0.002  # CPU seconds an iteration\n",
        "COST_S = 0.002 * {factor}  # CPU seconds an iteration; planted by gate_trial\n",
    ),
}
# the gate's targets: identical code "ok" within 120 s, a 5 % slowdown a regression within 180 s, 10 % within 90 s
DEFAULT_BUDGETS = "1.10:90,1.05:180,1.0:120"
GOALS = {1.10: 0.95, 1.05: 0.90, 1.0: 0.95}  # the share of trials that must decide right within the budget


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def scratch_clone(cell: str, factors: list[float], where: Path) -> tuple[Path, dict[float, str]]:
    """A clone of HEAD (for the program cell: a new repository holding only train.py) with
    one commit per arm; returns it and arm factor -> commit."""
    clone = where / f"repo-{cell}"
    if cell == "program":
        sys.path.insert(0, str(ROOT))
        from tests.harness.test_ab_program import PROGRAM

        clone.mkdir()
        git(clone, "init", "--quiet")
        (clone / "train.py").write_text(PROGRAM)
        git(clone, "add", "train.py")
        git(
            clone,
            "-c",
            "user.email=gate-trial@localhost",
            "-c",
            "user.name=gate trial",
            "commit",
            "--quiet",
            "-m",
            "base",
        )
    else:
        git(ROOT, "clone", "--quiet", "--shared", "--no-checkout", str(ROOT), str(clone))
        git(clone, "checkout", "--quiet", "--detach", git(ROOT, "rev-parse", "HEAD"))
    git(clone, "config", "user.email", "gate-trial@localhost")
    git(clone, "config", "user.name", "gate trial")
    base = git(clone, "rev-parse", "HEAD")
    _, path, anchor, patch = PLANTS[cell]
    commits = {}
    for factor in factors:
        git(clone, "checkout", "--quiet", "--detach", base)
        if factor == 1.0:
            git(clone, "commit", "--quiet", "--allow-empty", "-m", "identical code")
        else:
            target = clone / path
            text = target.read_text()
            if text.count(anchor) != 1:
                raise SystemExit(f"{path}: the line the {cell} slowdown is planted at is not there once: {anchor!r}")
            target.write_text(text.replace(anchor, patch.format(factor=factor)))
            git(clone, "commit", "--quiet", "-am", f"plant a {factor}x slowdown in {path}")
        commits[factor] = git(clone, "rev-parse", "HEAD")
    git(clone, "checkout", "--quiet", "--detach", base)
    return clone, {0.0: base, **commits}


def one_trial(clone: Path, cell: str, base: str, arm: str, budget: float, args: argparse.Namespace, out: Path) -> dict:
    seed = random.randrange(2**31)
    options, program = PLANTS[cell][0], []
    if "--" in options:  # the program after --, the options before it
        options, program = options[: options.index("--")], [*options[options.index("--") :]]
        program[1] = sys.executable
    command = [
        sys.executable, "-m", "harness.cli", "ab", base, arm, *options,
        "--budget", str(budget), "--tolerance", args.tolerance, "--seed", str(seed), "--out", str(out), "--quiet",
        *program,
    ]  # fmt: skip
    load = os.getloadavg()
    started = time.monotonic()
    done = subprocess.run(command, cwd=clone, capture_output=True, text=True, env=_child_env())
    wall = time.monotonic() - started
    if done.returncode in (130, -signal.SIGINT):  # the A/B was interrupted, not the trial decided: stop here
        raise KeyboardInterrupt
    runs = sorted(out.glob("*/ab.json"), key=lambda p: p.stat().st_mtime)
    if done.returncode not in (0, 1, 3) or not runs:
        return {"exit_code": done.returncode, "wall_s": wall, "error": (done.stderr or done.stdout)[-2000:]}
    doc = json.loads(runs[-1].read_text())
    shutil.rmtree(runs[-1].parent, ignore_errors=True)  # the raw data is kept below
    return {"exit_code": done.returncode, "wall_s": wall, "seed": seed, "load": [load, os.getloadavg()],
            "cell": doc["cells"][0]}  # fmt: skip


def _child_env() -> dict[str, str]:
    """This harness first on the path: a scratch repository of a user's program holds none."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def analyze(saved: list[Path]) -> None:
    """The figures docs/benchmarks.md quotes from a campaign, recomputed from the raw files.

    Per cell and arm: decisions with a 95 % Clopper-Pearson interval of the regression share,
    time and blocks to decide, how often the mean's interval would still have held the edge at
    the median test's decision, and the undecided trials' last intervals; per sitting, the
    decisions and the block noise; block and set-up lengths; then all files' arms together."""
    from scipy.stats import binomtest

    from harness.analysis.gating import parse_tolerance

    def share(k: int, n: int) -> str:
        ci = binomtest(k, n).proportion_ci(0.95, method="exact")
        return f"{k}/{n} = {k / n:.1%} [{ci.low:.1%}, {ci.high:.1%}]"

    totals: dict[float, list[int]] = {}
    for path in saved:
        data = json.loads(path.read_text())
        trials = data["trials"]
        edge = 1 - parse_tolerance(data["args"]["tolerance"])
        print(f"{len(trials)} trials from {path} ({data.get('started')} .. {data.get('written')}), edge {edge:.3f}")
        _decision_table(trials)
        _acceptance(trials)
        ran = [t for t in trials if "cell" in t]  # shares below leave errors out; the table counts them
        for cell in dict.fromkeys(t["cell_name"] for t in trials):
            mine = [t for t in ran if t["cell_name"] == cell]
            fewest = min((t["cell"]["interval"]["n"] for t in mine if t["cell"]["decided_s"] is not None), default=0)
            for factor in sorted({t["factor"] for t in mine}, reverse=True):
                arm = [t for t in mine if t["factor"] == factor]
                decided = [t["cell"] for t in arm if t["cell"]["decided_s"] is not None]
                regressions = sum(t["cell"]["decision"] == "regression" for t in arm)
                totals.setdefault(factor, [0, 0])
                totals[factor][0] += regressions
                totals[factor][1] += len(arm)
                means = [c["mean_interval"] for c in decided if "mean_interval" in c]  # files before 3de3d2f lack it
                held = sum(m["ratio_low"] <= edge <= m["ratio_high"] for m in means)
                seconds = [c["decided_s"] for c in decided]
                blocks = [c["interval"]["n"] for c in decided]
                print(f"  {cell} {_arm_label(factor)}: regression {share(regressions, len(arm))}")
                if decided:
                    print(
                        f"    decided in {median(seconds):.0f} s [{min(seconds):.0f}-{max(seconds):.0f}], "
                        f"{median(blocks):g} blocks; {sum(b == fewest for b in blocks)} at the fewest ({fewest})"
                        + (f"; the mean's interval still held {edge:.3f} in {held} of {len(means)}" if means else "")
                    )
                for t in arm:
                    if t["cell"]["decided_s"] is None:
                        iv = t["cell"]["interval"]
                        print(
                            f"    {t['cell']['decision']} (round {t['round'] + 1}): "
                            f"{iv['ratio']:.3f} [{iv['ratio_low']:.3f}, {iv['ratio_high']:.3f}] after {iv['n']} blocks"
                        )
            _sittings(data, mine)
            _lengths(mine)
            _noise_split(mine)
    if len(saved) > 1:
        print("all files:")
        for factor, (k, n) in sorted(totals.items(), reverse=True):
            print(f"  {_arm_label(factor)}: regression {share(k, n)}")
    print("recall = regression on a planted slowdown; false alarms = regression on identical code ('same')")


def _arm_label(factor: float) -> str:
    return "same" if factor == 1.0 else f"{factor:g}x"


def _decision_table(trials: list[dict]) -> None:
    print(f"{'cell':>6} {'arm':>6} {'n':>3} | {'regression':>10} {'ok':>6} {'undecided':>9} {'error':>5} | "
          f"{'median s to decide':>18} {'median ratio':>12}")  # fmt: skip
    for cell in dict.fromkeys(t["cell_name"] for t in trials):
        for factor in sorted({t["factor"] for t in trials if t["cell_name"] == cell}, reverse=True):
            mine = [t for t in trials if t["cell_name"] == cell and t["factor"] == factor]
            decisions = [t["cell"]["decision"] if "cell" in t else "error" for t in mine]
            decided = [t["cell"]["decided_s"] for t in mine if "cell" in t and t["cell"]["decided_s"] is not None]
            ratios = [t["cell"]["interval"]["ratio"] for t in mine if "cell" in t and t["cell"].get("interval")]
            n = len(mine)
            rate = {d: decisions.count(d) / n for d in ("regression", "ok", "undecided", "error")}
            print(
                f"{cell:>6} {_arm_label(factor):>6} {n:>3} | {rate['regression']:>10.0%} {rate['ok']:>6.0%} "
                f"{rate['undecided']:>9.0%} {rate['error']:>5.0%} | "
                f"{(f'{median(decided):.0f}' if decided else '-'):>18} {(f'{median(ratios):.3f}' if ratios else '-'):>12}"
            )


def _acceptance(trials: list[dict]) -> None:
    """Against the gate's targets: per cell and arm, the share of trials that decided right
    (a planted slowdown a regression, identical code ok) within the arm's budget, with its
    95 % Clopper-Pearson interval, and the false regressions on identical code; the load
    average (1 min) at the trials' starts."""
    import numpy as np
    from scipy.stats import binomtest

    def ci(k: int, n: int) -> str:
        low, high = binomtest(k, n).proportion_ci(0.95, method="exact") if n else (math.nan, math.nan)
        return f"{k}/{n} = {k / max(n, 1):.0%} [{low:.0%}, {high:.0%}]"

    print("against the goals (decided right within the budget; 95 % Clopper-Pearson):")
    for cell in dict.fromkeys(t["cell_name"] for t in trials):
        for factor in sorted({t["factor"] for t in trials if t["cell_name"] == cell}, reverse=True):
            arm = [t for t in trials if t["cell_name"] == cell and t["factor"] == factor]
            right = "ok" if factor == 1.0 else "regression"
            hits = sum(
                "cell" in t and t["cell"]["decision"] == right and (t["cell"]["decided_s"] or math.inf) <= t["budget_s"]
                for t in arm
            )
            goal = GOALS.get(factor)
            line = f"  {cell} {_arm_label(factor)}: {right} within {arm[0]['budget_s']:g} s {ci(hits, len(arm))}"
            line += f" (goal {goal:.0%})" if goal else ""
            if factor == 1.0:
                wrong = sum("cell" in t and t["cell"]["decision"] == "regression" for t in arm)
                line += f"; false regressions {ci(wrong, len(arm))}"
            loads = [t["load"][0][0] for t in arm if "load" in t]
            if loads:
                line += f"; load {np.median(loads):.1f} ({min(loads):.1f}-{max(loads):.1f})"
            print(line)


def _sittings(data: dict, trials: list[dict]) -> None:
    """Per sitting: runs of the file (its first and each --resume) that started less than an
    hour apart, one round runs ~5-25 min. Its rounds, commits, regressions per arm, and the
    per-trial sd of the block log-ratios (median, 10-90 %), the sitting's noise."""
    from datetime import datetime, timedelta

    import numpy as np

    runs = [{"started": data["started"], "head": data["head"]}, *data.get("sessions", [])]
    starts = [datetime.fromisoformat(r["started"].replace("Z", "+00:00")) for r in runs]
    sittings: list[list[int]] = []
    for run, start in enumerate(starts):
        if not sittings or start - starts[sittings[-1][-1]] > timedelta(hours=1):
            sittings.append([])
        sittings[-1].append(run)
    for number, members in enumerate(sittings, 1):
        mine = [t for t in trials if t.get("session", 0) in members]  # files before --resume: one run
        if not mine:
            continue
        rounds = sorted({t["round"] + 1 for t in mine})
        heads = ", ".join(dict.fromkeys(runs[r]["head"][:7] for r in members))
        arms = " ".join(
            f"{_arm_label(f)} {sum(t['cell']['decision'] == 'regression' for t in mine if t['factor'] == f)}"
            f"/{sum(t['factor'] == f for t in mine)}"
            for f in sorted({t["factor"] for t in mine}, reverse=True)
        )
        sds = [np.std(v, ddof=1) for t in mine if len(v := _values(t)) >= 2]
        print(
            f"    sitting {number} (from {runs[members[0]]['started']}, {heads}): rounds {rounds[0]}-{rounds[-1]}, "
            f"regression {arms}; block sd {np.median(sds):.3f} "
            f"(10-90 % {np.percentile(sds, 10):.3f}-{np.percentile(sds, 90):.3f})"
        )


def _values(trial: dict) -> list[float]:
    """A trial's block values, wall clock (the blocks that gave one)."""
    return [b["value"] for b in trial["cell"]["ab_blocks"] if b.get("value") is not None]


def _lengths(trials: list[dict]) -> None:
    """Block lengths after each trial's first (the first includes the workers' first work),
    the first block, the set-up before the budget starts, and the trial's wall clock."""
    import numpy as np

    later = [b["elapsed_s"] for t in trials for b in t["cell"]["ab_blocks"] if b["index"] > 0]
    first = [b["elapsed_s"] for t in trials for b in t["cell"]["ab_blocks"] if b["index"] == 0]
    setup = [t["cell"]["setup_s"] for t in trials]
    print(
        f"    blocks {np.median(later):.2f} s (10-90 % {np.percentile(later, 10):.2f}-{np.percentile(later, 90):.2f}, "
        f"{len(later)}), first block {np.median(first):.1f} s; set-up {np.median(setup):.1f} s "
        f"(10-90 % {np.percentile(setup, 10):.1f}-{np.percentile(setup, 90):.1f}); "
        f"trial wall {median(t['wall_s'] for t in trials):.0f} s"
    )


def _noise_split(trials: list[dict]) -> None:
    """Where a cell's noise lies: the sd between the measured pairs of one block (the same two
    processes, seconds apart), the sd of block values within a trial (fresh processes each),
    and how far the discarded warm-up pair lies from its block's value. Pairs that agree while
    blocks do not mean the noise comes with the launch, and only more launches average it."""
    import numpy as np

    within, warm = [], []
    for t in trials:
        for b in t["cell"]["ab_blocks"]:
            measured = [p["log_ratio"] for p in b["pairs"] if not p["warmup"] and p["log_ratio"] is not None]
            warmup = [p["log_ratio"] for p in b["pairs"] if p["warmup"] and p["log_ratio"] is not None]
            if len(measured) >= 2:
                within.append(np.var(measured, ddof=1))
            if measured and warmup:
                warm.append(warmup[0] - np.mean(measured))
    values = [[b["value"] for b in t["cell"]["ab_blocks"] if b.get("value") is not None] for t in trials]
    between = [np.var(v, ddof=1) for v in values if len(v) >= 2]
    if within and between:
        print(
            f"    noise: pairs of one block sd {np.sqrt(np.median(within)):.3f} ({len(within)} blocks), "
            f"blocks of one trial sd {np.sqrt(np.median(between)):.3f}; "
            f"warm-up pair - block value {np.mean(warm):+.3f} (sd {np.std(warm):.3f})"
        )
    spreads: dict[str, list[float]] = {}  # per estimand the decision read: each trial's robust sd of its blocks
    for t in trials:
        for estimand in t["cell"].get("estimands", []):
            key = "value" if estimand == "wall" else f"{estimand}_value"
            v = np.array([b[key] for b in t["cell"]["ab_blocks"] if b.get(key) is not None])
            if v.size >= 3:
                spreads.setdefault(estimand, []).append(1.4826 * float(np.median(np.abs(v - np.median(v)))))
    wall = [1.4826 * float(np.median(np.abs(np.array(v) - np.median(v)))) for v in values if len(v) >= 3]
    if spreads:
        print(
            "    blocks' robust sd within a trial, median over trials: wall clock "
            f"{np.median(wall):.3f}, "
            + ", ".join(f"{e} {np.median(x):.3f}" for e, x in spreads.items())
            + "; pairs a block "
            + ", ".join(
                f"{k} x{n}"
                for k, n in sorted(
                    Counter(
                        sum(not p["warmup"] for p in b["pairs"]) for t in trials for b in t["cell"]["ab_blocks"]
                    ).items()
                )
            )
        )


CAMPAIGN_FILES = ("benchmarks/data/ab_trial-campaign.json", "benchmarks/data/ab_trial-campaign-mccfr.json")


def measured_tails(path: Path) -> tuple[list[float], list[float], float]:
    """What a campaign's blocks say of their noise: every block's distance from its trial's
    median in units of that trial's robust sd (1.4826 MAD), the trials' robust sds, and the
    median block length (s)."""
    import numpy as np

    residuals, scales, lengths = [], [], []
    for trial in json.loads(path.read_text())["trials"]:
        blocks = [b for b in trial.get("cell", {}).get("ab_blocks", []) if b.get("value") is not None]
        values = np.array([b["value"] for b in blocks])
        if values.size < 7:
            continue
        middle = np.median(values)
        scale = 1.4826 * np.median(np.abs(values - middle))
        if scale > 0:
            residuals += list((values - middle) / scale)
            scales.append(scale)
            lengths += [b["elapsed_s"] for b in blocks if b["index"] > 0]
    return residuals, scales, float(np.median(lengths))


def simulate(budgets: dict[float, float], tolerances: list[float], tails: list[Path], trials: int = 1000) -> None:
    """The campaign modelled with a campaign's own tails (no runs): each simulated A/B draws a
    noise scale from that campaign's trials and its blocks' residuals from all of its
    blocks, each with a random sign (blocks symmetric about the truth, as two fresh
    processes drawn alike make them), and is judged by each statistic as run_all stops
    it. The "at the edge" arm puts the truth on the boundary: any decision is an error,
    with the residuals' signs as recorded too (skewed, if the recorded tails are)."""
    import numpy as np

    rng = np.random.default_rng(0)
    for path in tails:
        residuals, scales, block_s = measured_tails(path)
        residuals = np.array(residuals)
        print(f"{path}: {len(scales)} trials' tails, block {block_s:.1f} s; {trials} A/Bs per row")
        print(f"{'arm':>15} {'budget':>6} {'statistic':>9} {'tolerance':>9} | {'regression':>10} {'ok':>6} "
              f"{'undecided':>9} | median s to decide (90th)")  # fmt: skip
        for tolerance in tolerances:
            edge = math.log1p(-tolerance)
            arms = [(_arm_label(f), math.log(1 / f), b, True) for f, b in sorted(budgets.items(), reverse=True)]
            longest = max(budgets.values())
            arms += [("at the edge", edge, longest, True), ("edge, as signed", edge, longest, False)]
            for label, mu, budget, symmetric in arms:
                for statistic in ("sign", "clipped"):
                    out = []
                    for _ in range(trials):
                        noise = rng.choice(residuals, 300) * (rng.choice([-1, 1], 300) if symmetric else 1)
                        values = mu + rng.choice(scales) * noise
                        pool = np.stack([values, values], axis=1)  # wall clock, and one estimand
                        lengths = np.tile([block_s, 0.0], (300, 1))
                        out.append(_replay_arm(pool, lengths, budget, tolerance, statistic, rng, 1))
                    decisions = np.concatenate([o[0] for o in out])
                    times = np.concatenate([o[1] for o in out])[decisions != "undecided"]
                    shares = " ".join(
                        f"{np.mean(decisions == k):>{w}.1%}"
                        for k, w in (("regression", 10), ("ok", 6), ("undecided", 9))
                    )
                    spread = f"{np.median(times):.0f} ({np.percentile(times, 90):.0f})" if times.size else "-"
                    print(f"{label:>15} {budget:>6g} {statistic:>9} {tolerance:>9.1%} | {shares} | {spread}")


STATISTICS = ("sign", "clipped", "clipped-wall")


def replay(
    saved: list[Path], tolerances: list[float], first_pair_only: bool, statistics: list[str], resamples: int = 20
) -> None:
    """Predict what a variant of the A/B would have decided, from blocks it measured: each
    trial's own blocks are drawn with replacement, each with its recorded length, and judged
    after every block until a decision or the trial's budget, each statistic as its A/B
    stops: "sign", the median's sign test on the wall-clock blocks, as the A/B decided until
    2026-11-26 (no floor of blocks: the campaign's A/B had none); "clipped", the clipped bets on
    the estimands the trial's A/B read (files from before 2026-11-26 hold the wall clock
    alone), its floor of blocks first, as `run_all` does now; "clipped-wall", the clipped bets
    on the wall clock. All statistics see the same draws. Drawing within a trial keeps what is the trial's own (its worktrees' bias, its
    sitting's noise). With `first_pair_only` a block's value is its first measured pair and its
    length loses that block's other pairs: what one measured pair per launch would give. The
    recorded statistic at the recorded tolerance is the check: it should come out near the
    campaign's counts. A prediction, not a measurement: blocks are treated as exchangeable
    within a trial, and a trial that decided early lends its few blocks to every draw."""
    import numpy as np

    for path in saved:
        arms: dict[tuple[str, float], list[tuple[list, float]]] = {}
        for trial in json.loads(path.read_text())["trials"]:
            cell = trial.get("cell", {})
            estimands = cell.get("estimands") or ["wall"]
            drawn = [_replay_block(b, first_pair_only, estimands) for b in cell.get("ab_blocks", [])]
            drawn = [d for d in drawn if d is not None]
            if drawn:
                arms.setdefault((trial["cell_name"], trial["factor"]), []).append((drawn, trial["budget_s"]))
        what = "the first measured pair of each block" if first_pair_only else "blocks as run"
        print(f"{path}: {resamples} draws per trial, {what}")
        print(f"{'cell':>7} {'arm':>6} {'tolerance':>9} | {'regression':>10} {'ok':>6} {'undecided':>9} | "
              f"median s to decide (90th) | statistic")  # fmt: skip
        for tolerance in tolerances:
            for (cell, factor), trials in sorted(arms.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
                rows = {statistic: ({"regression": 0, "ok": 0, "undecided": 0}, []) for statistic in statistics}
                rng = np.random.default_rng(0)  # per row: a row does not depend on the others asked for
                for blocks, budget in trials:
                    for _ in range(resamples):
                        for statistic, (decision, spent) in _replay_ab(
                            blocks, budget, tolerance, rng, statistics
                        ).items():
                            rows[statistic][0][decision] += 1
                            if decision != "undecided":
                                rows[statistic][1].append(spent)
                for statistic, (counts, times) in rows.items():
                    n = sum(counts.values())
                    shares = " ".join(
                        f"{counts[k] / n:>{w}.1%}" for k, w in (("regression", 10), ("ok", 6), ("undecided", 9))
                    )
                    spread = f"{median(times):.0f} ({np.percentile(times, 90):.0f})" if times else "-"
                    print(
                        f"{cell:>7} {_arm_label(factor):>6} {tolerance:>9.1%} | {shares} | {spread:>25} | {statistic}"
                    )


def _replay_block(block: dict, first_pair_only: bool, estimands: list[str]) -> tuple[list, float, float] | None:
    """([wall value, each estimand's value], length s, launch s) of a recorded block, or of its
    first measured pair alone; None where it has no wall-clock value."""
    launch = sum(block.get("launch_s", {}).values())
    keys = ["value" if e == "wall" else f"{e}_value" for e in estimands]
    if block.get("value") is None:
        return None
    if not first_pair_only:
        return [block["value"], *(block.get(k) for k in keys)], block["elapsed_s"], launch
    measured = [p for p in block.get("pairs", []) if not p.get("warmup")]
    usable = [p for p in measured if p.get("log_ratio") is not None]
    if not usable:
        return None
    rest = sum(p["base"]["length_s"] + p["cand"]["length_s"] for p in measured if p is not usable[0])
    pair_keys = ["log_ratio" if e == "wall" else f"{e}_log_ratio" for e in estimands]
    return [usable[0]["log_ratio"], *(usable[0].get(k) for k in pair_keys)], block["elapsed_s"] - rest, launch


def _replay_ab(
    blocks: list, budget: float, tolerance: float, rng, statistics: list[str]
) -> dict[str, tuple[str, float]]:
    """One resampled A/B judged by each statistic on the same draws: statistic -> (decision,
    A/B seconds it took, the first launches excluded)."""
    from harness.ab import sequential

    floors = {"sign": 0, "clipped": sequential.blocks_to_decide(), "clipped-wall": sequential.blocks_to_decide()}
    clipped = {s: _ClippedBets(sequential.boundary(tolerance)) for s in statistics if s != "sign"}
    walls: list[float] = []
    spent = 0.0
    out: dict[str, tuple[str, float]] = {}
    while len(out) < len(statistics):
        value, length, launch = blocks[rng.integers(len(blocks))]
        walls.append(value[0])
        spent += length - (launch if len(walls) == 1 else 0.0)
        for statistic in statistics:
            if statistic in out:
                continue
            if statistic == "sign":
                decision = sequential.decide(sequential.median_sequence(walls), tolerance)
            else:  # the estimands the A/B read, or the wall clock alone
                decision = clipped[statistic].add(value[:1] if statistic == "clipped-wall" else value[1:])
            if decision != "continue" or (len(walls) >= floors[statistic] and spent + spent / len(walls) > budget):
                out[statistic] = (sequential.final(decision), spent)
    return out


class _ClippedBets:
    """The clipped bets at one boundary, a block at a time (what sequential.evidence computes
    for a whole sequence at once, without recomputing the past at every look)."""

    def __init__(self, edge: float) -> None:
        self.edge = edge
        self.values: list[list[float]] = []  # per estimand
        self.bets: list[list[float]] = []

    def add(self, value: list) -> str:
        import numpy as np

        from harness.ab import sequential

        if not self.values:
            self.values = [[] for _ in value]
            self.bets = [[] for _ in value]
        for past, bets, v in zip(self.values, self.bets, value, strict=True):
            x = float("nan") if v is None else float(v)
            scale = sequential.next_scale(np.array(past)) if past else 0.0
            bets.append(float(sequential.bets(np.array([x]), np.array([scale]), self.edge)[0]))
            past.append(x)
        up = np.array(self.bets)
        needed = math.log(1 / sequential.DEFAULT_ALPHA)
        below = sequential.logsumexp_mean(sequential.log_wealth(-up)[:, -1])
        above = float(sequential.log_wealth(up)[:, -1].min())
        return "regression" if below >= needed else "ok" if above >= needed else "continue"


@functools.cache
def _sign_table(count: int):
    """log e-values of the sign test, [blocks][blocks on one side], up to `count` blocks."""
    import numpy as np

    from harness.ab import sequential

    return np.array([[sequential.sign_log_evidence(k, m) for k in range(count + 1)] for m in range(count + 1)])


def _replay_arm(values, lengths, budget: float, tolerance: float, statistic: str, rng, resamples: int):
    """`resamples` A/Bs redrawn from one trial's blocks: (decisions, A/B seconds to each) as
    run_all stops them (the floor of blocks, then no block that would end past the budget)."""
    import numpy as np

    from harness.ab import sequential

    shortest = max(float(lengths[:, 0].min()), 0.5)
    floor = sequential.blocks_to_decide() if statistic == "clipped" else 7
    count = int(min(max(floor, budget / shortest + 2), 400))
    pick = rng.integers(len(values), size=(resamples, count))
    v = np.array(values, dtype=float)[pick]  # (resamples, count, 1 + estimands)
    spent = np.cumsum(lengths[pick, 0], axis=1) - lengths[pick[:, 0], 1][:, None]
    edge = sequential.boundary(tolerance)
    needed = math.log(1 / sequential.DEFAULT_ALPHA)
    if statistic == "sign":
        wall = v[:, :, 0]
        n = np.arange(1, count + 1)
        table = _sign_table(count)
        regression = table[n, np.cumsum(wall < edge, axis=1)] >= needed
        ok = table[n, np.cumsum(wall > edge, axis=1)] >= needed
    else:
        below, above = sequential.evidence(np.moveaxis(v[:, :, 1:], 1, 2), edge)
        regression, ok = below >= needed, above >= needed
    looks = np.arange(1, count + 1)
    # after block k: stop when past the floor and another average block would overrun
    over = (looks >= floor) & (spent + spent / looks > budget)
    last = np.where(over.any(axis=1), over.argmax(axis=1), count - 1)
    first_reg = np.where(regression.any(axis=1), regression.argmax(axis=1), count)
    first_ok = np.where(ok.any(axis=1), ok.argmax(axis=1), count)
    first = np.minimum(first_reg, first_ok)
    decided = first <= last
    decisions = np.where(decided, np.where(first_reg < first_ok, "regression", "ok"), "undecided")
    at = np.where(decided, first, last)
    return decisions, spent[np.arange(resamples), at]


def _tolerances(ap: argparse.ArgumentParser, text: str) -> list[float]:
    """--tolerances read as `harness ab --tolerance` reads one (3% or 0.03), or a usage error
    (exit 2) naming what was wrong."""
    from harness.analysis.gating import parse_tolerance
    from harness.errors import UserError

    try:
        return [parse_tolerance(t) for t in text.split(",")]
    except UserError as err:
        ap.error(f"--tolerances: {str(err).removeprefix('--tolerance ')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=40, help="trials per cell and arm")
    ap.add_argument("--cells", default="spin,mccfr,program", help=f"comma list of {', '.join(PLANTS)}")
    ap.add_argument("--budgets", default=DEFAULT_BUDGETS, help="arm factor:budget seconds, comma list (1.0 = same)")
    ap.add_argument("--tolerance", default="3%", help="harness ab --tolerance")
    ap.add_argument("--save", type=Path, default=Path("results/ab_trial.json"), help="raw results (JSON)")
    ap.add_argument(
        "--analyze", type=Path, nargs="+", default=None, help="only analyse saved files (several: also together)"
    )
    ap.add_argument(
        "--resume",
        action="store_true",
        help="add to the --save file's trials: --trials counts the rounds already there (a campaign over sessions)",
    )
    ap.add_argument("--simulate", default=None, help="comma list of tolerances: model the campaign, no runs")
    ap.add_argument(
        "--replay", type=Path, nargs="+", default=None, help="predict variants by redrawing saved files' blocks"
    )
    ap.add_argument("--tolerances", default="3%", help="--replay: comma list of tolerances (3%%,2.5%% or 0.03,0.025)")
    ap.add_argument(
        "--first-pair-only", action="store_true", help="--replay: one measured pair per block instead of all"
    )
    ap.add_argument(
        "--statistics",
        default="sign",
        help="--replay: comma list of sign (the campaign's), clipped (the decision now), clipped-wall",
    )
    args = ap.parse_args()
    if args.analyze is not None:
        missing = [str(p) for p in args.analyze if not p.is_file()]
        if missing:
            ap.error(f"--analyze: no such file: {', '.join(missing)} (give files written by --save)")
        analyze(args.analyze)
        return
    if args.replay is not None:
        missing = [str(p) for p in args.replay if not p.is_file()]
        if missing:
            ap.error(f"--replay: no such file: {', '.join(missing)} (give files written by --save)")
        unknown = [x for x in args.statistics.split(",") if x not in STATISTICS]
        if unknown:
            ap.error(f"--statistics: unknown {', '.join(unknown)}; allowed: {', '.join(STATISTICS)}")
        replay(args.replay, _tolerances(ap, args.tolerances), args.first_pair_only, args.statistics.split(","))
        return
    budgets = {float(f): float(b) for f, b in (item.split(":") for item in args.budgets.split(","))}
    if args.simulate is not None:
        simulate(budgets, _tolerances(ap, args.simulate), [ROOT / f for f in CAMPAIGN_FILES])
        return
    cells = [c.strip() for c in args.cells.split(",")]
    unknown = [c for c in cells if c not in PLANTS]
    if unknown:
        raise SystemExit(f"--cells: unknown {', '.join(unknown)}; allowed: {', '.join(PLANTS)}")
    scratch = Path(tempfile.mkdtemp(prefix="gate-trial-"))
    doc = {"args": {k: str(v) for k, v in vars(args).items()}, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "head": git(ROOT, "rev-parse", "HEAD"), "trials": []}  # fmt: skip
    first_round = 0
    if args.resume and args.save.exists():
        doc = json.loads(args.save.read_text())
        doc.setdefault("sessions", []).append(
            {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "head": git(ROOT, "rev-parse", "HEAD")}
        )
        first_round = 1 + max((t["round"] for t in doc["trials"]), default=-1)
        print(f"resuming {args.save}: {len(doc['trials'])} trials in {first_round} rounds", flush=True)
    started = time.monotonic()
    try:
        clones = {cell: scratch_clone(cell, sorted(budgets), scratch) for cell in cells}
        for round_ in range(first_round, args.trials):
            arms = [(cell, factor) for cell in cells for factor in budgets]
            random.shuffle(arms)
            for cell, factor in arms:
                clone, commits = clones[cell]
                trial = one_trial(clone, cell, commits[0.0], commits[factor], budgets[factor], args, scratch / "out")
                trial.update(
                    cell_name=cell, factor=factor, round=round_, budget_s=budgets[factor],
                    session=len(doc.get("sessions", [])),
                )  # fmt: skip
                doc["trials"].append(trial)
                doc["written"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                args.save.parent.mkdir(parents=True, exist_ok=True)
                args.save.write_text(json.dumps(doc, indent=1))
                got = trial["cell"] if "cell" in trial else None
                what = (
                    f"{got['decision']} {got['reason']}"
                    if got
                    else f"exit {trial['exit_code']}: {trial['error'][-300:]}"
                )
                print(f"round {round_ + 1}/{args.trials} {cell} {factor:g}x: {what} "
                      f"({trial['wall_s']:.0f} s; {time.monotonic() - started:.0f} s in all)", flush=True)  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print()
    analyze([args.save])
    print(f"raw results: {args.save}")


if __name__ == "__main__":
    main()
