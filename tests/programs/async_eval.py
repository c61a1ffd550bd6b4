"""An asynchronous actor-learner trainer, shaped as issue 43's: actor processes step a toy
environment without pause and send batches of transitions through a bounded queue; the
learner takes them, updates a linear policy with numpy, and every 2 s logs
`[learner] processed=N loss=X elapsed=S` (N: transitions learned from since the start; S:
its own clock). Every 15 s it evaluates the policy on 10 episodes, one line each:
`[eval] episode 0 return=31.0 length=31` ... `episode 9 ...`: an index that restarts at 0
every evaluation.

Its progress is `processed`, a running total beside its own clock, under a word that names
no unit: no reader takes it for a counter unless told (`--progress`). Argument: the number of
actors (default 2).
"""

import multiprocessing as mp
import sys
import time

import numpy as np

BATCH = 64
EVAL_EVERY_S = 15.0
EVAL_EPISODES = 10
LOG_EVERY_S = 2.0


class Walk:
    """A pole to keep upright, reduced to a noisy angle: an action pushes it left or right."""

    def __init__(self, rng):
        self.rng = rng
        self.reset()

    def reset(self):
        self.angle, self.speed, self.t = self.rng.normal(0, 0.05), 0.0, 0
        return self.observe()

    def observe(self):
        return np.array([self.angle, self.speed, 1.0])

    def step(self, action):
        self.speed += (0.02 if action else -0.02) + 0.04 * self.angle + self.rng.normal(0, 0.01)
        self.angle += self.speed
        self.t += 1
        done = abs(self.angle) > 0.5 or self.t >= 200
        return self.observe(), 1.0, done


def act(weights, obs, rng):
    p = 1.0 / (1.0 + np.exp(-obs @ weights))
    return int(rng.random() < p)


def actor(seed, queue, shared):
    rng = np.random.default_rng(seed)
    env, batch = Walk(rng), []
    obs = env.reset()
    while True:
        weights = np.frombuffer(shared.get_obj())
        action = act(weights, obs, rng)
        nxt, reward, done = env.step(action)
        batch.append((obs, action, reward))
        obs = env.reset() if done else nxt
        if len(batch) == BATCH:
            queue.put(batch)
            batch = []


def evaluate(weights, rng):
    env = Walk(rng)
    for episode in range(EVAL_EPISODES):
        obs, done, total, length = env.reset(), False, 0.0, 0
        while not done:
            obs, reward, done = env.step(act(weights, obs, rng))
            total += reward
            length += 1
            time.sleep(0.001)  # rendering the evaluation's frames
        print(f"[eval] episode {episode} return={total:.1f} length={length}", flush=True)


def learn(actors):
    rng = np.random.default_rng(0)
    shared = mp.Array("d", 3)
    queue = mp.Queue(maxsize=8)
    for seed in range(1, actors + 1):
        mp.Process(target=actor, args=(seed, queue, shared), daemon=True).start()
    weights = np.zeros(3)
    start = last_log = last_eval = time.monotonic()
    processed = 0
    while True:
        batch = queue.get()
        obs = np.array([o for o, _, _ in batch])
        actions = np.array([a for _, a, _ in batch])
        for _ in range(200):  # the update: a few hundred small gradient steps
            p = 1.0 / (1.0 + np.exp(-obs @ weights))
            weights -= 0.01 * obs.T @ (p - actions) / len(batch) + 0.001 * weights
        loss = float(np.mean((p - actions) ** 2))
        shared.get_obj()[:] = weights
        processed += len(batch)
        now = time.monotonic()
        if now - last_log >= LOG_EVERY_S:
            print(f"[learner] processed={processed} loss={loss:.4f} elapsed={now - start:.1f}", flush=True)
            last_log = now
        if now - last_eval >= EVAL_EVERY_S:
            evaluate(weights, rng)
            last_eval = time.monotonic()


if __name__ == "__main__":
    learn(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
