"""The policy-value network: a small AlphaZero-style residual tower (imports torch).

Input (n, PLANES, 6, 7) from the side to move; output policy logits (n, 7) and a value
(n,) in [-1, 1]. `blocks` and `channels` are the suite's net-size knobs; the defaults are
small enough that CPU self-play finishes games within a 2 s cell.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from suites.selfplay.connect4 import COLUMNS, PLANES, ROWS


@dataclass(frozen=True)
class NetConfig:
    blocks: int = 2
    channels: int = 32


class _Block(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


class PolicyValueNet(nn.Module):
    def __init__(self, config: NetConfig):
        super().__init__()
        c = config.channels
        cells = ROWS * COLUMNS
        self.stem = nn.Sequential(nn.Conv2d(PLANES, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
        self.tower = nn.Sequential(*[_Block(c) for _ in range(config.blocks)])
        self.policy = nn.Sequential(
            nn.Conv2d(c, 2, 1, bias=False),
            nn.BatchNorm2d(2),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(2 * cells, COLUMNS),
        )
        self.value = nn.Sequential(
            nn.Conv2d(c, 1, 1, bias=False),
            nn.BatchNorm2d(1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(cells, 64),
            nn.ReLU(),
            nn.Linear(64, 1),
            nn.Tanh(),
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.tower(self.stem(x))
        return self.policy(h), self.value(h).squeeze(-1)


def build_net(config: NetConfig, seed: int = 0, state_dict: dict | None = None) -> PolicyValueNet:
    """A net in eval mode: seeded random weights, or the given state dict (tensors or numpy)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = PolicyValueNet(config)
    if state_dict is not None:
        net.load_state_dict({k: torch.as_tensor(v) for k, v in state_dict.items()})
    return net.eval()


def portable_state(net: nn.Module) -> dict:
    """The weights as numpy arrays: they pickle to any process without torch's shared-memory
    file descriptors, and `build_net` takes them back."""
    return {k: v.detach().cpu().numpy() for k, v in net.state_dict().items()}


def parameter_count(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())
