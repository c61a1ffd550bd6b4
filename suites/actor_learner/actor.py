"""The actor: steps every agent's CartPole-v1 with an epsilon-greedy policy built from the
weights the learners published, and hands transitions over in per-epoch chunks.

It also measures policy lag: before every turn it picks up newly published weights and
records, per agent, how many training steps the learner has done beyond the version the
actor is acting with.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from suites.actor_learner import layout
from suites.actor_learner.policy import PolicyStack
from suites.actor_learner.weights import WeightBoard


def make_env() -> gym.Env:
    # the passive checker validates every step; it is a debugging aid, not part of CartPole
    return gym.make("CartPole-v1", disable_env_checker=True)


class Actor:
    def __init__(self, params: Any, board: WeightBoard, learner_updates: np.ndarray, seed: int) -> None:
        self.agents = board.agents
        self.board = board
        self.learner_updates = learner_updates  # live view: training steps done per agent
        self.policy = PolicyStack(self.agents, params.hidden)
        self.versions = np.full(self.agents, -1, np.int64)
        self._scratch = np.empty(self.policy.size, np.float32)
        self.epsilon_end = params.epsilon_end
        self.epsilon_decay_steps = params.epsilon_decay_steps
        self.rng = np.random.default_rng([seed, 1])
        self.envs = [make_env() for _ in range(self.agents)]
        self.obs = np.stack([env.reset(seed=seed * 1000 + i)[0] for i, env in enumerate(self.envs)])
        self.steps = np.zeros(self.agents, np.int64)
        self.chunk = np.zeros((self.agents, params.turns, layout.ROW_WIDTH), np.float32)
        self._returns = np.zeros(self.agents)
        self.finished_returns: list[float] = []
        self.lag_sum = np.zeros(self.agents)
        self.lag_min = np.full(self.agents, np.inf)
        self.lag_max = np.full(self.agents, -np.inf)
        self.lag_samples = 0

    def refresh(self) -> None:
        """Load the weights of every agent whose published version changed."""
        changed = self.board.versions != self.versions
        if changed.any():
            for agent in np.flatnonzero(changed):
                self.versions[agent] = self.board.read(agent, self._scratch)
                self.policy.load(agent, self._scratch)

    def _record_lag(self, lags: np.ndarray, turns: int) -> None:
        if turns:
            lags = lags[:turns]
            self.lag_sum += lags.sum(axis=0)
            np.minimum(self.lag_min, lags.min(axis=0), out=self.lag_min)
            np.maximum(self.lag_max, lags.max(axis=0), out=self.lag_max)
            self.lag_samples += turns

    def collect(self, quota: np.ndarray, should_stop: Any = None) -> np.ndarray:
        """Step agent i `quota[i]` times (quota <= turns) into `self.chunk[i]`; returns the
        steps actually taken per agent (fewer only if `should_stop()` turned True)."""
        turns = int(quota.max(initial=0))
        # exploration for the whole epoch at once: per-step numpy calls on 5-element
        # arrays cost more than the arithmetic, and the actor is the critical path
        decay = np.minimum((self.steps + np.arange(turns)[:, None]) / self.epsilon_decay_steps, 1.0)
        explore = self.rng.random((turns, self.agents)) < 1.0 - (1.0 - self.epsilon_end) * decay
        random_actions = self.rng.integers(0, layout.N_ACTIONS, (turns, self.agents))
        lags = np.empty((turns, self.agents))
        everyone, all_active = range(self.agents), int(quota.min(initial=0))
        done = turns
        for turn in range(turns):
            if should_stop is not None and should_stop():
                done = turn
                break
            self.refresh()
            np.subtract(self.learner_updates, self.versions, out=lags[turn])
            actions = np.where(explore[turn], random_actions[turn], self.policy.greedy(self.obs))
            row = self.chunk[:, turn]
            row[:, layout.OBS] = self.obs
            row[:, layout.ACTION] = actions
            agents = everyone if turn < all_active else np.flatnonzero(quota > turn)
            for agent in agents:
                # a numpy integer skips gymnasium's per-step np.iinfo range check of a Python int
                ob, reward, terminated, truncated, _ = self.envs[agent].step(actions[agent])
                out = row[agent]
                out[layout.NEXT_OBS] = ob
                out[layout.REWARD] = reward
                out[layout.DONE] = terminated  # a time-limit truncation still bootstraps
                self._returns[agent] += reward
                if terminated or truncated:
                    self.finished_returns.append(float(self._returns[agent]))
                    self._returns[agent] = 0.0
                    ob, _ = self.envs[agent].reset()
                self.obs[agent] = ob
        self._record_lag(lags, done)
        taken = np.minimum(quota, done)
        self.steps += taken
        return taken

    def close(self) -> None:
        for env in self.envs:
            env.close()


def evaluate(policy: PolicyStack | None, agents: int, episodes: int, seed: int) -> float:
    """Mean undiscounted return of greedy play (random play when `policy` is None) over
    `episodes` fresh, seeded episodes per agent."""
    if episodes <= 0:
        return float("nan")
    rng = np.random.default_rng([seed, 2])
    envs = [make_env() for _ in range(agents)]
    totals = []
    try:
        for episode in range(episodes):
            obs = np.stack([env.reset(seed=10_000 + seed * 1000 + 37 * episode + i)[0] for i, env in enumerate(envs)])
            returns = np.zeros(agents)
            running = np.ones(agents, bool)
            while running.any():
                if policy is None:
                    actions = rng.integers(0, layout.N_ACTIONS, agents)
                else:
                    actions = policy.greedy(obs)
                for agent in np.flatnonzero(running):
                    ob, reward, terminated, truncated, _ = envs[agent].step(int(actions[agent]))
                    obs[agent] = ob
                    returns[agent] += reward
                    running[agent] = not (terminated or truncated)
            totals.extend(returns.tolist())
    finally:
        for env in envs:
            env.close()
    return float(np.mean(totals))
