"""A chaos run: 1,000 cell-repeats of faulty cells on a disk that fills, under a harness that
is killed, interrupted and has its run directory made read-only, resumed after each blow.

    sudo python benchmarks/chaos.py [--cells 100] [--repeats 10] [--seed 1] [--work DIR]

Needs root (it mounts a tmpfs and bind-mounts the run directory read-only). The sweep: half
its cells healthy, half failing as the synthetic suite can (raise, exit, kill_worker,
segfault, oom, orphan, hang), each repeated. A driver starts `harness sweep` and, at a random
instant 1-30 s later (--max-delay), does one of: SIGKILL the harness, SIGINT it (Ctrl-C), fill the disk
(a ballast file takes every free byte of the tmpfs), or make the run directory read-only (a
read-only bind mount over it). It waits for the harness to stop, undoes the blow (ballast
removed, mount undone) and runs `harness sweep --resume`, until a resume runs to its end.

A model of what must survive, checked after every blow (as Jepsen checks a history):
cells.jsonl only ever grows (what was there before is still there, byte for byte, bar a torn
tail that the next resume sets aside), the harness's exit code is the one the blow calls for
(-9, 130, 74 with a message naming `harness sweep --resume`; 0 or 1 if the run ended first)
and no traceback. At the end: every cell-repeat has a record, each with the status its fault
calls for (the program's faults as the program's: none is `harness-error`), no temporary file,
no process of the run alive. Prints records expected / kept / torn / run again, the blows,
processes left, wall time; exits 1 if any check failed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.cell.processes import marked_processes  # noqa: E402

FAULTS = ("raise", "exit", "kill_worker", "segfault", "oom", "orphan", "hang")
# What each fault's final record must say: the program's failures, never the harness's.
EXPECTED = {
    "none": "ok",
    "raise": "error",
    "exit": "error",
    "kill_worker": "error",
    "segfault": "killed",
    "oom": "killed",
    "orphan": "ok",
    "hang": "timeout",
}
BLOWS = ("sigkill", "sigint", "disk_full", "read_only")
EXIT_FOR = {"sigkill": -signal.SIGKILL, "sigint": 130, "disk_full": 74, "read_only": 74}
DISK_MB = 256
STOP_TIMEOUT_S = 120  # a blow the harness has not answered by then is a problem (its stacks kept)


def spec_text(cells: int, repeats: int) -> str:
    """Half healthy, half split over the faults; every cell distinct (unit_size differs)."""
    lines = [
        'label = "chaos"',
        "duration = 0.1",
        'steady = "off"',
        f"repeats = {repeats}",
    ]
    healthy = cells // 2
    sizes = iter(range(20_000, 20_000 + cells))
    lines += [
        "[[matrix]]",
        'suite = "synthetic"',
        f"params = {{ workers = 1, unit_size = {[next(sizes) for _ in range(healthy)]} }}",
    ]
    faulty = cells - healthy
    for i, fault in enumerate(FAULTS):
        n = faulty // len(FAULTS) + (1 if i < faulty % len(FAULTS) else 0)
        lines += ["[[matrix]]", 'suite = "synthetic"']
        if fault == "hang":
            lines.append("timeout = 1.0")
        if fault == "oom":  # 320 MB/s, stopping itself at twice the limit: room for the watchdog's reading
            lines.append("memory_limit_mb = 256")
        workers = 2 if fault == "kill_worker" else 1
        lines.append(
            f'params = {{ fail = "{fault}", fail_after_s = 0.02, workers = {workers}, '
            f"unit_size = {[next(sizes) for _ in range(n)]} }}"
        )
    return "\n".join(lines) + "\n"


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True)


def fill(disk: Path) -> Path:
    """A ballast file that takes every free byte of the filesystem: written until the disk
    refuses it, in 1 MB and then 4 kB pieces (one fallocate of the free space fails whole
    when the harness takes a page meanwhile, and leaves the disk as it was)."""
    ballast = disk / "ballast"
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for piece in (b"\0" * 2**20, b"\0" * 4096):
            while True:
                try:
                    os.write(fd, piece)
                except OSError:
                    break
    finally:
        os.close(fd)
    return ballast


def read_only(path: Path) -> str | None:
    """Bind-mount `path` over itself read-only: open files stay writable, nothing new can be
    written. None when done; else why not (the bind undone)."""
    sh("mount", "--bind", str(path), str(path))
    for _ in range(5):
        done = subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], capture_output=True, text=True)
        if done.returncode == 0:
            return None
        time.sleep(0.2)
    subprocess.run(["umount", str(path)], capture_output=True)
    return done.stderr.strip() or f"exit {done.returncode}"


def processes_of(run_dir: Path | None, out: Path) -> list[str]:
    found: dict[int, psutil.Process] = {}
    if run_dir is not None and run_dir.exists():
        found.update(marked_processes(run_dir))
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if str(out) in " ".join(proc.info["cmdline"] or []):
                found[proc.pid] = proc
        except psutil.Error:
            pass
    return [
        f"{pid} {' '.join(p.cmdline())[:80]}" for pid, p in found.items() if p.is_running() and p.status() != "zombie"
    ]


def run_dir_of(out: Path) -> Path | None:
    dirs = [p for p in out.iterdir() if p.is_dir()] if out.exists() else []
    return dirs[0] if dirs else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=None, help="where the tmpfs is mounted (a temp dir)")
    parser.add_argument("--max-rounds", type=int, default=400)
    parser.add_argument("--max-delay", type=float, default=30.0, help="a blow comes 1 s to this long after a start")
    args = parser.parse_args()
    # A driver started in the background (nohup, &) inherits SIGINT ignored, and so would the
    # harness until it installs its handler: a Ctrl-C in its first second would be lost. A
    # terminal's Ctrl-C is never ignored; neither is ours (exec resets a caught signal).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rng = random.Random(args.seed)
    work = args.work or Path(tempfile.mkdtemp(prefix="chaos-"))
    disk = work / "disk"
    disk.mkdir(parents=True, exist_ok=True)
    sh("mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(disk))
    out = disk / "out"
    spec = work / "chaos.toml"
    spec.write_text(spec_text(args.cells, args.repeats))
    logs = work / "rounds"
    logs.mkdir(exist_ok=True)
    expected_total = args.cells * args.repeats
    problems: list[str] = []
    blows: collections.Counter[str] = collections.Counter()
    codes: collections.Counter[str] = collections.Counter()
    left_after_kill = 0
    started = time.monotonic()
    load_before = os.getloadavg()
    loads: list[float] = []
    unapplied: list[str] = []
    proc: subprocess.Popen[bytes] | None = None
    try:
        run_dir: Path | None = None
        before = b""
        for round_no in range(args.max_rounds):
            run_dir = run_dir_of(out)
            if run_dir is not None and not (run_dir / "run.json").exists():
                problems.append(f"round {round_no}: {run_dir} has no run.json (killed while created); started afresh")
                subprocess.run(["rm", "-rf", str(run_dir)], check=False)
                run_dir = None
            command = [sys.executable, "-m", "harness.cli", "sweep"]
            command += ["--resume", str(run_dir)] if run_dir else [str(spec), "--out", str(out)]
            blow = rng.choice(BLOWS)
            delay = rng.uniform(1.0, args.max_delay)
            err = logs / f"{round_no:03d}-{blow}.err"
            with open(err, "wb") as fh:
                proc = subprocess.Popen(command + ["--quiet"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=fh)
            try:
                proc.wait(timeout=delay)
                blow = "none"  # it ended first
            except subprocess.TimeoutExpired:
                pass
            ballast = None
            bound = None
            if blow == "sigkill":
                proc.send_signal(signal.SIGKILL)
            elif blow == "sigint":
                proc.send_signal(signal.SIGINT)
            elif blow == "disk_full":
                ballast = fill(disk)
            elif blow == "read_only":
                bound = run_dir_of(out)
                why = read_only(bound) if bound is not None else "no run directory yet"
                if why is not None:  # the blow could not be dealt: a Ctrl-C instead, and said so
                    unapplied.append(f"round {round_no}: read-only mount failed ({why}); SIGINT instead")
                    bound, blow = None, "sigint"
                    proc.send_signal(signal.SIGINT)
            try:
                code = proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                stacks = subprocess.run(["py-spy", "dump", "--pid", str(proc.pid)], capture_output=True, text=True)
                with open(err, "a") as fh:
                    fh.write(
                        f"\n[chaos: not stopped after {STOP_TIMEOUT_S} s; its stacks]\n{stacks.stdout}{stacks.stderr}"
                    )
                problems.append(f"round {round_no} ({blow}): the harness did not stop in {STOP_TIMEOUT_S} s; {err}")
                proc.kill()
                code = proc.wait()
            loads.append(os.getloadavg()[0])
            blows[blow] += 1
            codes[f"{blow}: {code}"] += 1
            if bound is not None:
                sh("umount", str(bound))
            if ballast is not None:
                ballast.unlink()
            text = err.read_text(errors="replace")
            early = blow == "sigint" and code == -signal.SIGINT and text.rstrip().endswith("KeyboardInterrupt")
            if early:  # Ctrl-C before the harness's handler is in place: Python's own exit
                codes["sigint before the harness's handler: -2"] += 1
            elif "Traceback" in text:
                problems.append(f"round {round_no} ({blow}): a traceback, see {err}")
            wanted = {EXIT_FOR[blow], 0, 1} if blow != "none" else {0, 1}
            wanted |= {-signal.SIGINT} if early else set()
            if code not in wanted:
                problems.append(f"round {round_no} ({blow}): exit code {code}, expected one of {sorted(wanted)}; {err}")
            if code == 74 and "harness sweep --resume" not in text:
                problems.append(f"round {round_no}: exit 74 without saying how to go on; {err}")
            run_dir = run_dir_of(out)
            now = (run_dir / "cells.jsonl").read_bytes() if run_dir and (run_dir / "cells.jsonl").exists() else b""
            kept_before = before[: before.rfind(b"\n") + 1]
            if not now.startswith(kept_before):
                problems.append(f"round {round_no} ({blow}): cells.jsonl lost or changed bytes written before it")
            before = now
            if blow == "sigkill":
                time.sleep(1.0)  # the cell's processes die with their owner (PR_SET_PDEATHSIG)
                left_after_kill += len(processes_of(run_dir, out))
            if blow == "none" and code in (0, 1):
                break
        else:
            problems.append(f"the run did not complete in {args.max_rounds} rounds")
        wall = time.monotonic() - started
        run_dir = run_dir_of(out)
        assert run_dir is not None
        history = [line for line in (run_dir / "cells.jsonl").read_text().splitlines() if line.strip()]
        records = [json.loads(line) for line in history]
        latest = {(r["id"], r["repeat"]): r for r in records}
        torn_path = run_dir / "cells.jsonl.torn"
        torn = len([x for x in torn_path.read_bytes().split(b"\n") if x]) if torn_path.exists() else 0
        attempts = collections.Counter(re.sub(r"(\.\d+)?\.log$", "", p.name) for p in (run_dir / "logs").glob("*.log"))
        run_again = sum(n - 1 for n in attempts.values())
        harness_failed = sum(r["status"] == "harness-error" for r in records)
        wrong = [
            f"{r['params']['fail']} -> {r['status']}: {r.get('reason')}"
            for r in latest.values()
            if r["status"] != EXPECTED[r["params"]["fail"]]
        ]
        temporaries = [str(p) for p in run_dir.rglob("*.tmp")] + [str(p) for p in (run_dir / "series").glob(".*")]
        left = processes_of(run_dir, out)
        statuses = collections.Counter((r["params"]["fail"], r["status"]) for r in latest.values())
        loads.sort()
        print(
            f"load average (1 min) before {load_before[0]:.1f}; after each round median {loads[len(loads) // 2]:.1f} "
            f"({loads[0]:.1f}-{loads[-1]:.1f})"
        )
        print(f"records expected {expected_total}, kept {len(latest)}, lost {expected_total - len(latest)}")
        print(f"lines in cells.jsonl {len(history)}; torn lines set aside {torn}")
        print(f"cell-repeats run again {run_again} (records of the harness's failures {harness_failed})")
        print("blows: " + ", ".join(f"{b} {n}" for b, n in sorted(blows.items())))
        print("exit codes: " + ", ".join(f"{k} x{n}" for k, n in sorted(codes.items())))
        print("final statuses: " + ", ".join(f"{f}/{s} {n}" for (f, s), n in sorted(statuses.items())))
        print(f"statuses not as the fault calls for: {len(wrong)}" + ("".join(f"\n  {w}" for w in wrong[:10])))
        print(
            f"processes alive 1 s after a SIGKILL of the harness (summed over kills; the next resume ends them): {left_after_kill}"
        )
        print(f"processes left at the end {len(left)}" + (": " + "; ".join(left) if left else ""))
        print(f"temporary files left {len(temporaries)}" + (": " + ", ".join(temporaries[:5]) if temporaries else ""))
        print(f"wall time {wall:.0f} s over {sum(blows.values())} rounds; records and rounds' stderr kept in {work}")
        for name in ("cells.jsonl", "cells.jsonl.torn", "run.json"):
            if (run_dir / name).exists():
                (work / name).write_bytes((run_dir / name).read_bytes())  # kept for a look after the tmpfs goes
        for note in unapplied:
            print(f"blow not dealt: {note}")
        for problem in problems:
            print(f"problem: {problem}")
        ok = not problems and not wrong and not left and not temporaries and len(latest) == expected_total
        return 0 if ok else 1
    finally:
        if proc is not None and proc.poll() is None:  # the driver failed: end the harness cleanly first
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
        subprocess.run(["umount", "-l", str(disk)], check=False)


if __name__ == "__main__":
    sys.exit(main())
