"""Workers that send their whole growing table back every batch.

`full`: each worker adds rows to its table and puts the whole table on the result queue.
`delta`: it puts only the rows it added. The main process merges what it gets.
"""

import multiprocessing as mp
import sys
import time

ROWS_PER_BATCH = 2000


def worker(mode, wid, results):
    table = {}
    batch = 0
    while True:
        new = {}
        for i in range(ROWS_PER_BATCH):
            key = (wid, batch, i)
            new[key] = (i * 31 + batch) % 1009 / 1009.0
        table.update(new)
        results.put(table if mode == "full" else new)
        batch += 1


if __name__ == "__main__":
    mode = sys.argv[1]
    results = mp.Queue(maxsize=2)
    for wid in range(2):
        mp.Process(target=worker, args=(mode, wid, results), daemon=True).start()
    merged = {}
    batches, last, t = 0, 0, time.time()
    while True:
        merged.update(results.get())
        batches += 1
        if time.time() - t >= 0.5:
            print(f"batch {batches} ({(batches - last) / (time.time() - t):.1f} batches/s)", flush=True)
            last, t = batches, time.time()
