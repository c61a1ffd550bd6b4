"""Self-play and training in Ray actors: two Player actors make batches, one Learner actor
trains on them, the driver passes each finished batch on and keeps two batches in flight
per player and at most two in the learner's mailbox. Work is CPU time.

    python ray_actors.py learner|players [--every S]

`learner`: a batch costs a player 2 ms and the learner 12 ms: the Learner limits, the
Players wait. `players`: a batch costs a player 12 ms and the learner 1 ms: the Players
limit (both: one group by their class), the Learner waits. The driver prints
`trained N batches` every S seconds (default 0.5). Ray's runtime (gcs_server, raylet, the
dashboard, its agents) runs beside them on the same cores.
"""

import argparse
import time

import ray


def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@ray.remote
class Player:
    def __init__(self, cost):
        self.cost = cost

    def play(self):
        spin(self.cost)
        return b"x" * 64


@ray.remote
class Learner:
    def __init__(self, cost):
        self.cost = cost
        self.trained = 0

    def train(self, batch):
        spin(self.cost)
        self.trained += 1
        return self.trained


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("learner", "players"))
    parser.add_argument("--every", type=float, default=0.5)
    args = parser.parse_args()
    play_s, train_s = (0.002, 0.012) if args.mode == "learner" else (0.012, 0.001)
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False, configure_logging=False)
    players = [Player.remote(play_s) for _ in range(2)]
    learner = Learner.remote(train_s)
    pending = {p.play.remote(): p for p in players for _ in range(2)}
    training = []
    trained, last = 0, time.monotonic()
    while True:
        ready, _ = ray.wait(list(pending), num_returns=1)
        player = pending.pop(ready[0])
        pending[player.play.remote()] = player
        training.append(learner.train.remote(ready[0]))
        if len(training) > 2:
            trained = ray.get(training.pop(0))
        if time.monotonic() - last >= args.every:
            last = time.monotonic()
            print(f"trained {trained} batches", flush=True)


if __name__ == "__main__":
    main()
