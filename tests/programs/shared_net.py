"""Sixteen threads that share one torch net and each call it with a batch of one.

`threads`: 16 threads, each evaluates its own position, one at a time.
`batched`: one thread evaluates the same 16 positions in one call.
"""

import sys
import threading
import time

import torch

torch.set_num_threads(1)
net = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
THREADS = 16
count = [0]


def player(tid):
    x = torch.randn(1, 64)
    with torch.no_grad():
        while True:
            net(x)
            count[0] += 1


if __name__ == "__main__":
    if sys.argv[1] == "threads":
        for tid in range(THREADS):
            threading.Thread(target=player, args=(tid,), daemon=True).start()
        positions = None
    else:
        positions = torch.randn(THREADS, 64)
    last, t = 0, time.time()
    with torch.no_grad():
        while True:
            if positions is not None:
                net(positions)
                count[0] += THREADS
            else:
                time.sleep(0.05)
            if time.time() - t >= 0.5:
                print(f"evals {count[0]} ({(count[0] - last) / (time.time() - t):.1f} evals/s)", flush=True)
                last, t = count[0], time.time()
