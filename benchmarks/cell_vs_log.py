"""Each cell of a sweep held against the program's own log, as the cell received it.

    python benchmarks/cell_vs_log.py RUN_DIR 'CAP-{workers}.jsonl' 'env_step=(\\d+)' [--clock REGEX]

A sweep of a user's program run behind `benchmarks/capture_output.py CAP-{workers}.jsonl
--tee -- PROGRAM` leaves, per cell, the harness's headline (cells.jsonl), its series (the
counter's level at each sample, series/ID-0.csv) and the program's own lines with their
arrival times (the capture). This prints, per cell, the harness's figure beside the rate
from the program's own numbers over the cell's measured window:

- the window: from the series' first `measure` sample to that plus `measure_s`, on the
  cell's clock; the capture's clock starts later (the capture tool's own start-up), by an
  offset found by fitting the capture's numbers to the series' levels (the harness counted
  the same lines), to a few hundredths of a second;
- `first-last`: between the first and last changes of the number inside the window, as one
  reads a log by hand, with how many reports (changes) the window holds;
- `window`: over the whole window, the number interpolated at its start and held after
  its last report (a program silent at the window's end made no progress there);
- `clock` (with --clock, a regex of the program's elapsed seconds on the same line, or
  `H:MM:SS`-like): the growth per second of the program's own clock between the changes in
  the window, over the stretches where that clock runs on (a bar per epoch starts it again),
  nothing of the harness's clock in it.

REGEX's first group is the number (commas allowed; a bar per epoch: named groups `epoch`,
`n`, `total`, the batches since the start); it must be the counter the headline
names (a program printing it in several reports: the regex picks the one the harness counts).
"""

from __future__ import annotations

import argparse
import bisect
import csv
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.program import capture  # noqa: E402


def _seconds(text: str) -> float:
    out = 0.0
    for part in text.split(":"):
        out = out * 60 + float(part)
    return out


def _value(match: re.Match[str]) -> float:
    """The regex's first group; or, with groups `epoch`, `n` and `total` (a bar per epoch,
    `Epoch 84: 50%| 16/32`), the batches since the start: epoch * total + n."""
    groups = match.groupdict()
    if {"epoch", "n", "total"} <= groups.keys():
        return float(groups["epoch"]) * float(groups["total"]) + float(groups["n"])
    return float(match.group(1).replace(",", ""))


def log_points(path: Path, number: re.Pattern[str], clock: re.Pattern[str] | None) -> list[tuple[float, float, float | None]]:
    """(arrival, the number, the program's clock on that line) where the number changed; a
    line arrives when it is ended (a bar's redraw `\\r...` when the next one comes), as the
    cell reads it."""
    points: list[tuple[float, float, float | None]] = []
    last = None
    for t, _, line in capture.lines(path):
        if not line.endswith("\n"):
            continue  # a stream's last line, never ended (a bar's last redraw): the cell never read it
        for match in number.finditer(line):
            value = _value(match)
            if value != last:
                c = clock.search(line) if clock else None
                points.append((t, value, _seconds(c.group(1)) if c else None))
            last = value
    return points


def fit_offset(samples: list[tuple[float, float]], points: list[tuple[float, float, float | None]]) -> float:
    """The capture's clock is the cell's less this: the shift that makes the capture's number at
    each sample time differ from the series' counted level by one constant (the level at the
    first sighting) at the most samples; the middle of the best range."""
    times = [t for t, _, _ in points]

    def misses(delta: float) -> int:
        diffs = []
        for t_s, level in samples:
            i = bisect.bisect_right(times, t_s - delta) - 1
            diffs.append(None if i < 0 else points[i][1] - level)
        common = Counter(d for d in diffs if d is not None).most_common(1)
        return len(diffs) - (common[0][1] if common else 0)

    grid = [k / 200 for k in range(-200, 1001)]  # -1 s .. 5 s
    scores = [misses(d) for d in grid]
    best = min(scores)
    run = [d for d, s in zip(grid, scores, strict=True) if s == best]
    return (run[0] + run[-1]) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="the sweep's run directory (holds cells.jsonl)")
    parser.add_argument("captures", help="the captures' path with {workers}")
    parser.add_argument("regex")
    parser.add_argument("--clock", help="regex of the program's elapsed time on the same line")
    args = parser.parse_args()
    number = re.compile(args.regex)
    clock = re.compile(args.clock) if args.clock else None
    for line in (args.run / "cells.jsonl").read_text().splitlines():
        record = json.loads(line)
        workers, m = record["params"]["workers"], record["metrics"]
        headline = m.get("headline_rate")
        counter = headline.removesuffix("_per_s") if headline else None
        rows = list(csv.DictReader((args.run / record["series"]).open()))
        samples = [(float(r["t_s"]), float(r["value"])) for r in rows if r["metric"] == counter]
        measured = [float(r["t_s"]) for r in rows if r["metric"] == counter and r["phase"] == "measure"]
        if not measured:
            print(f"workers {workers}: no measured samples of {counter}")
            continue
        start = measured[0]
        end = start + m["measure_s"]
        points = log_points(Path(args.captures.format(workers=workers)), number, clock)
        delta = fit_offset(samples, points)
        shifted = [(t + delta, v, c) for t, v, c in points]
        inside = [p for p in shifted if start <= p[0] <= end]
        before = [p for p in shifted if p[0] < start]
        rate = m.get(headline) if headline else None
        head = f"workers {workers}: harness {headline} {rate:.4g} ({m.get('headline_check')})" if rate else f"workers {workers}: no headline"
        if len(inside) < 2:
            print(f"{head}; {len(inside)} report(s) in the window {start:.1f}-{end:.1f} s: no rate from the log")
            continue
        (t0, v0, _), (t1, v1, _) = inside[0], inside[-1]
        first_last = (v1 - v0) / (t1 - t0)
        level0 = v0
        if before:
            tb, vb, _ = before[-1]
            level0 = vb + (v0 - vb) * (start - tb) / (t0 - tb)
        whole = (v1 - level0) / (end - start)
        own = ""
        # by its clock: over the stretches where it runs on (a bar per epoch starts its clock again)
        steps = [(b[1] - a[1], b[2] - a[2]) for a, b in zip(inside, inside[1:], strict=False)
                 if a[2] is not None and b[2] is not None and b[2] >= a[2] and b[1] >= a[1]]
        units, seconds = sum(u for u, _ in steps), sum(c for _, c in steps)
        if clock and seconds > 0:
            own = f"; by its clock {units / seconds:.4g}/s ({seconds:g} s)"
        print(
            f"{head}; log: {len(inside)} reports in {start:.1f}-{end:.1f} s (capture +{delta:.2f} s), "
            f"{v0:g} at {t0:.1f} -> {v1:g} at {t1:.1f}: first-last {first_last:.4g}/s, window {whole:.4g}/s{own}; "
            f"harness/first-last {rate / first_last:.3f}, harness/window {rate / whole:.3f}"
        )


if __name__ == "__main__":
    main()
