"""A trainer that works in phases: collect, then update. The main process steps W env
worker processes in lock-step through pipes (send an action to each, wait for every
observation) for T steps, then updates on its own, then prints a line like a PPO trainer's.
Work is CPU time.

    python phased.py update|envs [--workers W] [--steps T] [--every K]

`update`: an env step costs 0.2 ms, the update 80 ms: the main process limits, the env
workers have slack. `envs`: a step costs 4 ms, the update 5 ms: the env workers limit
(both at once: one group), the main process mostly waits on them. One line
`update U | env_steps S` every K updates (default 1); T defaults to 16 steps.
"""

import argparse
import multiprocessing as mp
import time


def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def env_worker(conn, step_s):
    while True:
        action = conn.recv()
        spin(step_s)
        conn.send(action + 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("update", "envs"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--every", type=int, default=1)
    args = parser.parse_args()
    step_s, update_s = (0.0002, 0.08) if args.mode == "update" else (0.004, 0.005)
    conns = []
    for _ in range(args.workers):
        ours, theirs = mp.Pipe()
        mp.Process(target=env_worker, args=(theirs, step_s), daemon=True).start()
        conns.append(ours)
    steps = updates = 0
    while True:
        for _ in range(args.steps):
            for conn in conns:
                conn.send(0)
            for conn in conns:
                conn.recv()
            steps += len(conns)
        spin(update_s)
        updates += 1
        if updates % args.every == 0:
            print(f"update {updates} | env_steps {steps}", flush=True)


if __name__ == "__main__":
    main()
