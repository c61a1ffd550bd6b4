"""A batch split over more workers than it has units, the way many trainers split it.

`floor`: each of 16 workers plays `batch // workers` = 12 // 16 = 0 games, so no game is
played, yet the loop counts the batch as done. `split`: the first `batch % workers`
workers get one game more (12 workers with one game each) and idle workers are not started.
`lost_work.py floor 128 100` is the seeds' scale: a pool of 128 processes handed 100 // 128.
"""

import multiprocessing as mp
import sys
import time

WORKERS = 16
BATCH = 12


def play(games):
    x = 0
    for _ in range(games):
        for k in range(150_000):
            x += k
    return games


def split(total, workers):
    base, extra = divmod(total, workers)
    return [base + (i < extra) for i in range(workers) if base + (i < extra) > 0]


if __name__ == "__main__":
    mode = sys.argv[1]
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else WORKERS
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else BATCH
    shares = [batch // workers] * workers if mode == "floor" else split(batch, workers)
    with mp.Pool(len(shares)) as pool:
        it, last, t = 0, 0, time.time()
        while True:
            pool.map(play, shares, chunksize=1)
            x = 0
            for k in range(100_000):  # the learner's step on the batch
                x += k
            it += 1
            if time.time() - t >= 0.5:
                print(f"Iteration {it} ({(it - last) / (time.time() - t):.1f} iter/s)", flush=True)
                last, t = it, time.time()
