"""A chain of 2 or 3 process stages with a known bottleneck: the main process makes items,
each further stage takes them from a bounded queue, works on them and passes them on. Work
is CPU time (a stopped stage does none of it); the stage with the largest cost limits the
throughput, the others have slack.

    python stages.py COSTS [--every S | --per N] [--reporter main|last] [--queue Q]

COSTS: each stage's CPU time per item in ms, main first (`1,3`: the consumer limits;
`1,3,1`: the middle stage). The stages after main run the functions stage_b and stage_c. Progress as real programs print it: every S seconds (default
0.5) the main process prints `Iteration N (X iter/s)` with N the items the last stage
finished (`--reporter last`: the last stage prints `Iteration N` itself), or with `--per N`
one line every N items finished.
"""

import argparse
import multiprocessing as mp
import time


def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def work_on(inbox, outbox, cost, done, args):
    last = time.monotonic()
    while True:
        item = inbox.get()
        spin(cost)
        if outbox is not None:
            outbox.put(item)
            continue
        with done.get_lock():
            done.value += 1
            n = done.value
        if args.reporter == "last" and args.per is None and time.monotonic() - last >= args.every:
            last = time.monotonic()
            print(f"Iteration {n}", flush=True)
        elif args.per is not None and n % args.per == 0:
            print(f"Iteration {n}", flush=True)


# one function per stage, as a pipeline's stages usually are: the harness tells processes apart
# by the function they were started to run
def stage_b(*args):
    work_on(*args)


def stage_c(*args):
    work_on(*args)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("costs")
    parser.add_argument("--every", type=float, default=0.5)
    parser.add_argument("--per", type=int, default=None)
    parser.add_argument("--reporter", choices=("main", "last"), default="main")
    parser.add_argument("--queue", type=int, default=32)
    args = parser.parse_args()
    costs = [float(c) / 1000 for c in args.costs.split(",")]
    queues = [mp.Queue(maxsize=args.queue) for _ in costs[1:]]
    done = mp.Value("l", 0)
    for k, cost in enumerate(costs[1:]):
        outbox = queues[k + 1] if k + 1 < len(queues) else None
        target = (stage_b, stage_c)[k]
        mp.Process(target=target, args=(queues[k], outbox, cost, done, args), daemon=True).start()
    t0 = last = time.monotonic()
    while True:
        spin(costs[0])
        queues[0].put(1)
        now = time.monotonic()
        if args.reporter == "main" and args.per is None and now - last >= args.every:
            n = done.value
            print(f"Iteration {n} ({n / (now - t0):.1f} iter/s)", flush=True)
            last = now


if __name__ == "__main__":
    main()
