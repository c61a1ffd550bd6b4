"""CPU-bound Python spread over threads (GIL-bound) or over processes.

`threads`: 4 threads run a pure-Python loop; `processes`: 4 processes run the same loop.
"""

import multiprocessing as mp
import sys
import threading
import time


def spin(counts, i):
    x = 0
    while True:
        for k in range(10_000):
            x += k
        counts[i] += 1


if __name__ == "__main__":
    n = 4
    if sys.argv[1] == "threads":
        counts = [0] * n
        for i in range(n):
            threading.Thread(target=spin, args=(counts, i), daemon=True).start()
    else:
        counts = mp.Array("q", n, lock=False)
        for i in range(n):
            mp.Process(target=spin, args=(counts, i), daemon=True).start()
    last, t = 0, time.time()
    while True:
        time.sleep(0.5)
        total = sum(counts)
        print(f"chunks {total} ({(total - last) / (time.time() - t):.1f} chunks/s)", flush=True)
        last, t = total, time.time()
