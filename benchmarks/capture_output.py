"""Capture a program's output as the harness sees it, for the readers' corpus (tests/corpus/).

    python benchmarks/capture_output.py OUT.jsonl[.gz] --seconds 40 -- VENV/bin/python train.py ...
    python benchmarks/capture_output.py OUT.jsonl --slice 10 25        # keep 10 s..25 s (in place)
    python benchmarks/capture_output.py OUT.jsonl --show               # the lines, timed, as read
    python benchmarks/capture_output.py OUT.jsonl --scrub /opt/venvs/x=VENV   # machine paths out
    python benchmarks/capture_output.py OUT.jsonl --series 'env_step=(\\d+)'  # a number's rate

The program runs as harness.program.launch starts it (both streams piped, stdin /dev/null,
PYTHONUNBUFFERED=1) and every chunk it writes is kept with its arrival time
(harness.program.capture). `--slice` keeps the part that matters (a capture must stay tens
of KB): the first line (what ran) and the chunks in [FROM, TO] seconds, times unchanged.
`--series` is the aid for computing a rate by hand from the program's own numbers: every
sighting of the regex's group with its time, and the rate between the first and last
sightings in [FROM, TO] (the two ends it took are printed, to be checked by eye).
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.program import capture  # noqa: E402


def slice_capture(path: Path, start: float, end: float) -> None:
    header, chunks = capture.read(path)
    kept = [c for c in chunks if start <= c[0] <= end]
    with capture._open(path, "w") as out:
        out.write(json.dumps(header) + "\n")
        for t, s, d in kept:
            out.write(json.dumps({"t": t, "s": s, "d": d}) + "\n")
    print(f"kept {len(kept)} of {len(chunks)} chunks, {path.stat().st_size / 1024:.1f} KB")


def scrub(path: Path, pairs: list[str]) -> None:
    """Replace machine paths (a venv's, a scratch folder's) in the capture's text: `OLD=NEW`."""
    header, chunks = capture.read(path)
    swaps = [pair.split("=", 1) for pair in pairs]

    def clean(text: str) -> str:
        for old, new in swaps:
            text = text.replace(old, new)
        return text

    header["argv"] = [clean(word) for word in header["argv"]]
    with capture._open(path, "w") as out:
        out.write(json.dumps(header) + "\n")
        for t, s, d in chunks:
            out.write(json.dumps({"t": t, "s": s, "d": clean(d)}) + "\n")


def show(path: Path) -> None:
    for t, stream, line in capture.lines(path):
        print(f"{t:8.3f} {stream} {line.rstrip(chr(10))!r}")


def replay(path: Path, duration: float) -> None:
    metrics, warnings = capture.replay_cell(path, duration)
    headline = metrics.get("headline_rate")
    print(f"headline {headline} = {metrics.get(headline, float('nan')):.4g}" if headline else "no headline")
    for name, value in sorted(metrics.items()):
        if name.endswith(("_per_s", "_vs_counted")) or name.startswith(
            ("printed_", "warmup", "measure", "progress_", "headline_", "replay_")
        ):
            print(f"  {name} = {value}")
    for warning in warnings:
        print(f"  warning: {warning}")


def series(path: Path, regex: str, start: float, end: float) -> None:
    pattern = re.compile(regex)
    points = []
    for t, _, line in capture.lines(path):
        for match in pattern.finditer(line):
            points.append((t, float(match.group(1).replace(",", ""))))
    inside = [p for p in points if start <= p[0] <= end]
    for t, v in inside:
        print(f"{t:8.3f} {v:g}")
    if len(inside) >= 2 and inside[-1][0] > inside[0][0]:
        (t0, v0), (t1, v1) = inside[0], inside[-1]
        print(f"rate ({v1:g} - {v0:g}) / ({t1:.3f} - {t0:.3f}) = {(v1 - v0) / (t1 - t0):.4g} per s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path)
    parser.add_argument("--seconds", type=float, default=40.0, help="run the program this long")
    parser.add_argument("--tee", action="store_true", help="pass its output on too (inside a harness cell)")
    parser.add_argument("--slice", nargs=2, type=float, metavar=("FROM", "TO"))
    parser.add_argument("--show", action="store_true")
    parser.add_argument("--scrub", nargs="+", metavar="OLD=NEW", help="replace machine paths in the capture")
    parser.add_argument("--replay", type=float, metavar="DURATION", help="read it as a cell of this --duration")
    parser.add_argument("--series", metavar="REGEX")
    parser.add_argument("--window", nargs=2, type=float, default=(0.0, float("inf")), metavar=("FROM", "TO"))
    words = sys.argv[1:]
    cut = words.index("--") if "--" in words else len(words)
    args = parser.parse_args(words[:cut])
    argv = words[cut + 1 :]
    if args.slice:
        slice_capture(args.path, *args.slice)
    elif args.scrub:
        scrub(args.path, args.scrub)
    elif args.show:
        show(args.path)
    elif args.replay:
        replay(args.path, args.replay)
    elif args.series:
        series(args.path, args.series, *args.window)
    else:
        if not argv:
            parser.error("the program to run goes after --")
        # a harness cell ends us with SIGTERM: end the program and close the capture cleanly
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        code = capture.record(argv, args.path, args.seconds, tee=args.tee)
        print(f"exit {code}; {args.path} {args.path.stat().st_size / 1024:.1f} KB", file=sys.stderr)


if __name__ == "__main__":
    main()
