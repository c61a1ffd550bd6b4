"""Shapes shared by the actor, the learners and the buffers: CartPole's sizes, the row
layout of one transition, and the flat layout of one Q network's parameters."""

from __future__ import annotations

OBS_DIM = 4  # CartPole-v1: cart position, cart velocity, pole angle, pole angular velocity
N_ACTIONS = 2

# one transition as a float32 row: obs, action, reward, next_obs, terminated
OBS = slice(0, OBS_DIM)
ACTION = OBS_DIM
REWARD = OBS_DIM + 1
NEXT_OBS = slice(OBS_DIM + 2, 2 * OBS_DIM + 2)
DONE = 2 * OBS_DIM + 2
ROW_WIDTH = 2 * OBS_DIM + 3


def layer_shapes(hidden: int) -> list[tuple[int, int]]:
    """(out, in) of the three linear layers, in `torch.nn.utils.parameters_to_vector` order."""
    return [(hidden, OBS_DIM), (hidden, hidden), (N_ACTIONS, hidden)]


def param_count(hidden: int) -> int:
    return sum(out * inp + out for out, inp in layer_shapes(hidden))
