"""A two-stage pipeline whose stages work in threads: the main process makes items in a
producer thread while its main thread only reports; the consumer process takes them with
two threads (pure Python: they share one GIL, so the process is one stage however many
threads it runs). Work is CPU time.

    python threads.py consumer|producer [--every S]

`consumer`: an item costs the producer thread 1 ms and the consumer 3 ms: the consumer
limits. `producer`: the other way round. Every S seconds (default 0.2) the main thread prints
`step N` with N the items consumed so far.
"""

import argparse
import multiprocessing as mp
import threading
import time


def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def take(q, cost, done):
    while True:
        q.get()
        spin(cost)
        with done.get_lock():
            done.value += 1


def consumer(q, cost, done):
    threads = [threading.Thread(target=take, args=(q, cost, done)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def produce(q, cost):
    while True:
        spin(cost)
        q.put(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("consumer", "producer"))
    parser.add_argument("--every", type=float, default=0.2)
    args = parser.parse_args()
    light, heavy = 0.001, 0.003
    produce_s, consume_s = (light, heavy) if args.mode == "consumer" else (heavy, light)
    q, done = mp.Queue(maxsize=32), mp.Value("l", 0)
    # each consumer thread spends the item's whole cost: they share one GIL, so the process
    # finishes one item per cost however many threads take them
    mp.Process(target=consumer, args=(q, consume_s, done), daemon=True).start()
    threading.Thread(target=produce, args=(q, produce_s), daemon=True).start()
    while True:
        time.sleep(args.every)
        print(f"step {done.value}", flush=True)


if __name__ == "__main__":
    main()
