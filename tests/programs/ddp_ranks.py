"""A data-parallel job as Lightning starts one, and nothing else: no harness code. `python
ddp_ranks.py RANKS [SECONDS]` starts RANKS - 1 copies of itself with WORLD_SIZE and
LOCAL_RANK in their environment (as Lightning's launcher does for every rank but the first);
each rank trains for SECONDS (~5 ms of CPU a step), and only rank 0 prints its progress
(`Epoch 0: step N`), as such jobs do. With RANKS 1 it is a plain single-process loop."""

import os
import subprocess
import sys
import time


def step() -> None:
    end = time.process_time() + 0.005
    while time.process_time() < end:
        pass


def main(ranks: int, seconds: float) -> None:
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    others = []
    if rank == 0 and ranks > 1:
        for other in range(1, ranks):
            env = {**os.environ, "WORLD_SIZE": str(ranks), "LOCAL_RANK": str(other)}
            others.append(subprocess.Popen([sys.executable, __file__, str(ranks), str(seconds)], env=env))
    start = time.time()
    steps = 0
    while time.time() - start < seconds:
        step()
        steps += 1
        if rank == 0 and steps % 20 == 0:
            print(f"Epoch 0: step {steps}", flush=True)
    for proc in others:
        proc.wait()


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 3600.0)
