"""What it costs to move an mccfr reply between processes: pipe or shared memory.

A reply of `--rows` rows (int64 row ids plus regret and average changes, 3 float64
each, as a delta reply is laid out) goes to a child process and back, `--repeats` times:

- `pipe`: `Connection.send` of the arrays (pickled, written through the pipe, read and
  unpickled on the other side), as the processes backend did before shared_rows.py;
- `shared`: the arrays copied into a shared-memory block, the block's name and row count
  sent through the same pipe, and the child copying them out of the block (what the
  backend does now: a worker writes its reply into a block, the main process reads it).

Prints the median round trip and the bytes per second it amounts to.

    python benchmarks/row_transport.py --rows 450000 --repeats 20
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import time
from typing import Any

import numpy as np

from suites.mccfr.shared_rows import Attached, BlockPool


def echo_arrays(inbox: Any, outbox: Any) -> None:
    while (message := inbox.recv()) is not None:
        outbox.send(message)


def echo_blocks(inbox: Any, outbox: Any, capacity: int) -> None:
    attached = Attached(capacity)
    while (message := inbox.recv()) is not None:
        there, back = message
        arrays = [a.copy() for a in attached[there.name].view(there.count)]
        outbox.send(attached[back].write(*arrays))
    attached.close()


def round_trips(mode: str, rows: int, repeats: int) -> list[float]:
    ids = np.arange(0, 4 * rows, 4, dtype=np.int64)
    regret = np.random.default_rng(0).normal(size=(rows, 3))
    avg = -regret
    ctx = mp.get_context("fork")
    to_child, child_in = ctx.Pipe(duplex=False)[::-1]
    child_out, from_child = ctx.Pipe(duplex=False)[::-1]
    pool = BlockPool(rows) if mode == "shared" else None
    if pool is None:
        target, args = echo_arrays, (child_in, child_out)
    else:
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
        target, args = echo_blocks, (child_in, child_out, rows)
    child = ctx.Process(target=target, args=args, daemon=True)
    child.start()
    times = []
    try:
        for _ in range(repeats + 2):  # the first two warm the pages and the caches
            started = time.perf_counter()
            if pool is None:
                to_child.send((ids, regret, avg))
                got = from_child.recv()
            else:
                there, back = pool.take(), pool.take()
                to_child.send((there.write(ids, regret, avg), back.name))
                ref = from_child.recv()
                got = [a.copy() for a in pool[ref.name].view(ref.count)]
                pool.give(there.name)
                pool.give(back.name)
            times.append(time.perf_counter() - started)
            assert np.array_equal(got[0], ids)
            del got
    finally:
        to_child.send(None)
        child.join()
        if pool is not None:
            pool.close()
    return times[2:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=450_000)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    nbytes = args.rows * (8 + 2 * 3 * 8)
    print(f"reply of {args.rows} rows = {nbytes / 1e6:.1f} MB, there and back")
    for mode in ("pipe", "shared"):
        median = statistics.median(round_trips(mode, args.rows, args.repeats))
        print(f"{mode:>6}: median round trip {1e3 * median:7.1f} ms = {2 * nbytes / median / 1e6:6.0f} MB/s")


if __name__ == "__main__":
    main()
