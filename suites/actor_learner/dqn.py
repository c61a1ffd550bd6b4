"""The learner's side of one DQN agent (Mnih et al. 2015): online and target MLPs, Adam,
Huber loss on one-step targets. Imports torch; only learners and `run` import this module."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from suites.actor_learner import layout


def build_qnet(hidden: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(layout.OBS_DIM, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, layout.N_ACTIONS),
    )


def initial_weights(agents: int, hidden: int, seed: int) -> np.ndarray:
    """Each agent's starting parameters [agents, P], seeded per agent (same in both backends)."""
    out = np.empty((agents, layout.param_count(hidden)), np.float32)
    for agent in range(agents):
        torch.manual_seed(seed * 1000 + agent)
        out[agent] = nn.utils.parameters_to_vector(build_qnet(hidden).parameters()).detach().numpy()
    return out


class DQNLearner:
    """One agent's training state; `step` takes a batch of transition rows [B, ROW_WIDTH]."""

    def __init__(self, flat: np.ndarray, params: Any) -> None:
        self.device = torch.device(params.device)
        self.gamma = params.gamma
        self.target_interval = params.target_interval
        self.net = build_qnet(params.hidden).to(self.device)
        self.load(flat)
        self.target = build_qnet(params.hidden).to(self.device)
        self.target.load_state_dict(self.net.state_dict())
        self.target.requires_grad_(False)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=params.lr)
        self.updates = 0

    def load(self, flat: np.ndarray) -> None:
        with torch.no_grad():
            nn.utils.vector_to_parameters(
                torch.from_numpy(np.array(flat, np.float32)).to(self.device), self.net.parameters()
            )

    def flat(self) -> np.ndarray:
        """The online network's parameters as one float32 vector on the CPU."""
        with torch.no_grad():
            return nn.utils.parameters_to_vector(self.net.parameters()).cpu().numpy()

    def step(self, rows: np.ndarray) -> None:
        batch = torch.from_numpy(rows).to(self.device)
        obs, next_obs = batch[:, layout.OBS], batch[:, layout.NEXT_OBS]
        actions = batch[:, layout.ACTION].long()
        rewards, done = batch[:, layout.REWARD], batch[:, layout.DONE]
        q = self.net(obs).gather(1, actions[:, None]).squeeze(1)
        with torch.no_grad():
            target = rewards + self.gamma * (1.0 - done) * self.target(next_obs).max(dim=1).values
        loss = nn.functional.smooth_l1_loss(q, target)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.updates += 1
        if self.updates % self.target_interval == 0:
            self.target.load_state_dict(self.net.state_dict())
