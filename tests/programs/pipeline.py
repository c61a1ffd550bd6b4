"""A two-stage pipeline with a known bottleneck: producer -> bounded queue -> consumer, each
stage a process. The work is CPU time (a stage that is stopped does none of it).

`consumer`: an item costs the producer 1 unit and the consumer 3: the consumer is the limit.
`producer`: the other way round. Optional second argument: the unit in ms (default 1);
third: the queue's size (default 32). The consumer prints the items it finished as the
harness's JSON count lines every 50 ms.
"""

import json
import multiprocessing as mp
import sys
import time


def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def producer(q, cost):
    i = 0
    while True:
        spin(cost)
        q.put(i)
        i += 1


def consumer(q, cost):
    done, last = 0, time.monotonic()
    while True:
        q.get()
        spin(cost)
        done += 1
        if time.monotonic() - last >= 0.05:
            print(json.dumps({"count": {"items": done}}), flush=True)
            done, last = 0, time.monotonic()


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "consumer"
    unit = (float(sys.argv[2]) if len(sys.argv) > 2 else 1.0) / 1000
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    heavy, light = 3 * unit, unit
    costs = (light, heavy) if mode == "consumer" else (heavy, light)
    q = mp.Queue(maxsize=size)
    stages = [mp.Process(target=producer, args=(q, costs[0])), mp.Process(target=consumer, args=(q, costs[1]))]
    for stage in stages:
        stage.start()
    for stage in stages:
        stage.join()
