"""Asynchronous workers on shared memory (hogwild), and workers that never get work.

`compute`: two workers update a shared array without a lock and without pause: they make no
voluntary context switch, so they wake "less than once a second" while computing all the
time (harness watch once called such workers dormant). `dormant`: the two workers wait on an
event that is never set, while the main process does the work. Both print `updates=N` twice
a second, and its rate (`updates/s`).
"""

import multiprocessing as mp
import sys
import time


def train(shared, n):
    x = 0
    while True:
        for i in range(100_000):
            x = (x * 31 + i) % 1_000_003
        shared[n] += 1


def wait_for_work(event):
    event.wait()


if __name__ == "__main__":
    mode = sys.argv[1]
    shared = mp.Array("l", 2, lock=False)
    never = mp.Event()
    target, args = (train, lambda n: (shared, n)) if mode == "compute" else (wait_for_work, lambda n: (never,))
    workers = [mp.Process(target=target, args=args(n), daemon=True) for n in range(2)]
    for w in workers:
        w.start()
    t, done, last = time.time(), 0, 0
    while True:
        if mode == "dormant":  # the main process does the work itself
            x = 0
            for i in range(100_000):
                x = (x * 31 + i) % 1_000_003
            done += 1
        if time.time() - t >= 0.5:
            total = done + shared[0] + shared[1]
            print(f"updates={total} {(total - last) / (time.time() - t):.1f} updates/s", flush=True)
            t, last = time.time(), total
        elif mode == "compute":
            time.sleep(0.05)
