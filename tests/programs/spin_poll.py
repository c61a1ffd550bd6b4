"""A main process that busy-polls a queue (get_nowait in a loop, no sleep) beside CPU-bound
worker processes, one per core: the poller does nothing useful, but it takes a core the
workers could use. The workers print the items they finished as the harness's JSON count
lines every 50 ms. Optional argument: the number of workers (default: one per core).
"""

import json
import multiprocessing as mp
import os
import queue
import sys
import time


def work(q):
    done, last, x = 0, time.monotonic(), 0
    while True:
        for k in range(20000):
            x += k
        q.put(x % 7)
        done += 1
        if time.monotonic() - last >= 0.05:
            print(json.dumps({"count": {"items": done}}), flush=True)
            done, last = 0, time.monotonic()


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else (os.cpu_count() or 2)
    q = mp.Queue()
    for _ in range(n):
        mp.Process(target=work, args=(q,), daemon=True).start()
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            pass
