"""Producer processes feeding one consumer in batches: two knobs whose best is interior, with
a plateau along one and a cliff along the other (harness tune's planned search is measured on
it: docs/benchmarks.md, "Tune or grid").

    python producers.py --workers W --batch B

Each of W producer processes owns a block of B rows of ROW_KIB KiB and, per batch, makes
PASSES passes over it (scale and sum, numpy), then sends the batch's row sums to the consumer
through a multiprocessing queue. The consumer counts the rows it received and prints them as
the harness's JSON count lines ({"count": {"rows": n}}) every 0.2 s.

Where the time goes, from first principles rather than from a tune's results:

- a batch has a fixed cost (the queue's pickling, the pipe, the consumer's wake-up), which a
  larger batch amortises: rows/s rises with B while that cost dominates;
- a batch's passes stream over B x ROW_KIB KiB; while that fits the core's L2 cache (lscpu
  says so; 4 MiB on the 2-core VM) a pass runs from cache, past it from the shared L3 or
  memory: rows/s falls off a cliff once the block outgrows it;
- producers share the machine's cores with each other and the consumer: past the core count
  they only time-share (and evict each other's blocks), a plateau that slowly declines.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time

import numpy as np

ROW_KIB = 8
PASSES = 16
SETUP = 32768  # floats drawn per batch: its fixed cost (an environment's reset, a fresh seed)
REPORT_S = 0.2


def producer(queue: mp.Queue, batch: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    block = rng.random((batch, ROW_KIB * 1024 // 8))
    while True:
        sums = np.zeros(batch)
        sums += rng.random(SETUP).mean()
        for _ in range(PASSES):
            np.multiply(block, 1.0000001, out=block)
            sums += block.sum(axis=1)
        queue.put(sums)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args()
    queue: mp.Queue = mp.Queue(maxsize=4 * args.workers)
    procs = [mp.Process(target=producer, args=(queue, args.batch, n), daemon=True) for n in range(args.workers)]
    for proc in procs:
        proc.start()
    rows, last = 0, time.monotonic()
    while True:
        rows += len(queue.get())
        if time.monotonic() - last >= REPORT_S:
            print(json.dumps({"count": {"rows": rows}}), flush=True)
            rows, last = 0, time.monotonic()


if __name__ == "__main__":
    main()
