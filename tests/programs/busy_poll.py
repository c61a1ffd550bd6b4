"""A learner that polls its queue with a 1 ms sleep and publishes weights every 10 steps.

`poll`: the learner asks the queue with get_nowait() and sleeps 1 ms when it is empty.
`block`: the learner blocks on get(). Two actor processes feed it experience.
"""

import multiprocessing as mp
import queue
import sys
import time


def actor(experience, weights):
    version, x = 0, 0
    while True:
        for k in range(200000):  # ~10 ms an item: the learner, far faster, finds the queue empty
            x += k
        experience.put((version, x % 97))
        try:
            version = weights.get_nowait()
        except queue.Empty:
            pass


def learner(mode, experience, weights_queues):
    steps, last, t = 0, 0, time.time()
    total = 0
    while True:
        if mode == "poll":
            try:
                item = experience.get_nowait()
            except queue.Empty:
                time.sleep(0.001)
                continue
        else:
            item = experience.get()
        total += item[1]
        steps += 1
        if steps % 10 == 0:
            for w in weights_queues:
                w.put(steps)
        if time.time() - t >= 0.5:
            print(f"step {steps} ({(steps - last) / (time.time() - t):.1f} steps/s)", flush=True)
            last, t = steps, time.time()


if __name__ == "__main__":
    mode = sys.argv[1]
    experience = mp.Queue()
    weights = [mp.Queue() for _ in range(2)]
    for w in weights:
        mp.Process(target=actor, args=(experience, w), daemon=True).start()
    learner(mode, experience, weights)
