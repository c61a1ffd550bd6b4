"""What reading a program's progress costs the harness: CPU seconds per 1,000 output lines
of each shape, and per TensorBoard event file (and per 1,000 of its events).

    python benchmarks/readers_cost.py [--lines 20000] [--events 2000] [--repeats 5]

The lines go through the same Feed the `command` suite uses (every line reader tried, in
order, and the probe called), timed with time.process_time, so other load on the machine
changes the figures little. Prints the median and [min-max] over the repeats.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.probe import Probe  # noqa: E402
from harness.readers import Feed, file_readers, line_readers  # noqa: E402

SHAPES = {
    "table row": lambda i: f"|    total_timesteps | {i * 64:<8d} |",
    "tqdm bar": lambda i: f"epoch 0: {i % 100:3d}%|###   | {i}/100000 [00:12<01:30, 98.7it/s]",
    "Iteration N (X iter/s)": lambda i: f"2026-11-25 10:00:00,000 INFO Iteration {i} (33.4 iter/s)",
    "key=value pairs": lambda i: f"global_step={i} loss={1.0 / (i + 1):.4f} lr=0.0003",
    "JSON object": lambda i: f'{{"global_step": {i}, "loss": {1.0 / (i + 1):.4f}}}',
    "unrecognised text": lambda i: f"[worker {i % 8}] finished a rollout of the environment",
}


def time_lines(make, lines: int) -> float:
    probe = Probe(duration_s=3600)
    feed = Feed(probe, line_readers())
    texts = [make(i) for i in range(lines)]
    start = time.process_time()
    for text in texts:
        feed.line(text)
    return (time.process_time() - start) / lines * 1000 * 1000  # ms per 1,000 lines


def time_events(events: int) -> tuple[float, float]:
    from torch.utils.tensorboard import SummaryWriter

    with tempfile.TemporaryDirectory() as tmp:
        writer = SummaryWriter(f"{tmp}/runs/x")
        for step in range(events):
            writer.add_scalar("charts/SPS", 1000.0, step)
        writer.close()
        probe = Probe(duration_s=3600)
        feed = Feed(probe, [], file_readers("runs", Path(tmp)))
        start = time.process_time()
        feed.poll_files()
        first = time.process_time() - start
        start = time.process_time()
        feed.poll_files()  # nothing new: the cost of looking
        idle = time.process_time() - start
    return first / events * 1000 * 1000, idle  # ms per 1,000 events; s


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3g} [{min(values):.3g}-{max(values):.3g}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=20000)
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"CPU ms per 1,000 lines (median [min-max] of {args.repeats})")
    for name, make in SHAPES.items():
        print(f"  {name:24s} {spread([time_lines(make, args.lines) for _ in range(args.repeats)])}")
    runs = [time_events(args.events) for _ in range(args.repeats)]
    print(f"TensorBoard: CPU ms per 1,000 scalar events {spread([r[0] for r in runs])}; "
          f"a poll that finds nothing new {spread([1000 * r[1] for r in runs])} ms")  # fmt: skip


if __name__ == "__main__":
    main()
