"""The actor's batched numpy policy computes what the learner's torch network computes."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from suites.actor_learner.dqn import build_qnet
from suites.actor_learner.layout import param_count
from suites.actor_learner.policy import PolicyStack


def test_policy_stack_matches_each_agents_torch_network() -> None:
    hidden, agents = 16, 3
    nets = []
    stack = PolicyStack(agents, hidden)
    for agent in range(agents):
        torch.manual_seed(agent)
        net = build_qnet(hidden)
        nets.append(net)
        flat = nn.utils.parameters_to_vector(net.parameters()).detach().numpy()
        assert flat.shape == (param_count(hidden),)
        stack.load(agent, flat)
    obs = np.random.default_rng(0).standard_normal((agents, 4)).astype(np.float32)
    with torch.no_grad():
        expected = np.stack([nets[a](torch.from_numpy(obs[a])).numpy() for a in range(agents)])
    np.testing.assert_allclose(stack.q_values(obs), expected, rtol=1e-5, atol=1e-6)
    assert stack.greedy(obs).tolist() == expected.argmax(axis=1).tolist()
