"""What each step of delta sync costs per batch, against the kernel, in one process.

Two `WorkerState`s and the main process's `Merger` run the additive protocol of the
processes backend with no transport at all (batch b is merged and applied before b+1,
i.e. staleness 0): so the figures are the row work of sync alone, on whatever code is
checked out. Per batch of `--batch-size` iterations split over the two workers: the
kernel's time (both workers), taking the batch's changes (both), the merge, and applying
the merged update (both); medians over the batches after `--skip`, and the distinct rows
one worker reported per iteration.

    python benchmarks/mccfr_sync_steps.py --ranks 64 --batch-size 100000 --batches 12

Run from an older checkout (`git worktree add /tmp/old <commit>`, then
`cd /tmp/old && python /path/to/this/script ...`) to compare the same steps before a change.
"""

from __future__ import annotations

import argparse
import statistics
import time

from suites.mccfr.backends.merge import Merger
from suites.mccfr.games import flatten, leduc_variant
from suites.mccfr.worker import WorkerState, new_tables, warm_kernels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--suits", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--skip", type=int, default=4, help="first batches left out (cold pages)")
    args = parser.parse_args()
    game = flatten(leduc_variant(args.ranks, args.suits, 2))
    warm_kernels(game)
    workers = [WorkerState(game, "delta", *new_tables(game.num_infosets)) for _ in range(2)]
    merger = Merger(*new_tables(game.num_infosets), "delta")
    steps: dict[str, list[float]] = {"kernel": [], "take": [], "merge": [], "apply": [], "rows/it": []}
    share = args.batch_size // 2
    for batch in range(args.batches):
        started = time.perf_counter()
        replies = [w.run(share, (0, batch, i), batch) for i, w in enumerate(workers)]
        ran = time.perf_counter()
        update = merger.merge(replies, batch)
        merged = time.perf_counter()
        for w in workers:
            w.apply([update])
        applied = time.perf_counter()
        if batch < args.skip:
            continue
        kernel = sum(r.compute_s for r in replies)
        steps["kernel"].append(kernel)
        steps["take"].append(ran - started - kernel)
        steps["merge"].append(merged - ran)
        steps["apply"].append(applied - merged)
        steps["rows/it"].append(replies[0].rows.size / share)
    print(
        f"{game.num_infosets} information sets, batch {args.batch_size} over 2 workers, medians of {len(steps['kernel'])}"
    )
    for name, values in steps.items():
        median = statistics.median(values)
        print(f"  {name:>7}: {median:8.2f}" if name == "rows/it" else f"  {name:>7}: {1e3 * median:8.1f} ms")


if __name__ == "__main__":
    main()
