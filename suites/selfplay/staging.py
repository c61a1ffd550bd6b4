"""The server's forward pass over a staging buffer it owns (imports torch).

The inference server copies each batch's positions from the clients' shared-memory slots
straight into one input buffer (no concatenation per batch) and reads the answers from one
output buffer. On cuda both buffers are pinned host memory and the copies are non-blocking
on the buffer's own stream, so that one batch's transfers overlap another's compute when
the server has several batches in flight; on the CPU they are plain tensors. `forward` then
returns once the answers are in host memory.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from suites.selfplay.connect4 import COLUMNS, PLANES, ROWS
from suites.selfplay.net import NetConfig, build_net

REPLY_WIDTH = COLUMNS + 1  # priors, then the value (as channel.REPLY_WIDTH)


class StagedForward:
    """A net on `device` with input and output buffers for up to `capacity` positions."""

    def __init__(self, net: torch.nn.Module, device: torch.device, capacity: int):
        self.device = device
        self.net = net.to(device).eval()
        self.capacity = capacity
        self.cuda = device.type == "cuda"
        self._input = torch.empty((capacity, PLANES, ROWS, COLUMNS), dtype=torch.float32, pin_memory=self.cuda)
        self._output = torch.empty((capacity, REPLY_WIDTH), dtype=torch.float32, pin_memory=self.cuda)
        self.inputs = self._input.numpy()  # the server writes positions here
        self.outputs = self._output.numpy()  # forward's answers land here
        self.stream = torch.cuda.Stream(device) if self.cuda else None

    @classmethod
    def build(
        cls, config: NetConfig, device: torch.device, capacity: int, state_dict: dict | None = None
    ) -> StagedForward:
        return cls(build_net(config, state_dict=state_dict), device, capacity)

    @property
    def net_device(self) -> str:
        return str(next(self.net.parameters()).device)

    def forward(self, n: int) -> np.ndarray:
        """Evaluate the first `n` rows of `inputs`: an (n, 8) view of priors then the value,
        valid until the next call."""
        if not 0 < n <= self.capacity:
            raise ValueError(f"batch of {n} positions: this buffer holds 1..{self.capacity}")
        with torch.inference_mode():
            if self.stream is None:
                self._compute(self._input[:n], n)
            else:
                with torch.cuda.stream(self.stream):
                    x = self._input[:n].to(self.device, non_blocking=True)
                    self._compute(x, n)
                self.stream.synchronize()
        return self.outputs[:n]

    def _compute(self, x: torch.Tensor, n: int) -> None:
        logits, values = self.net(x)
        out = torch.cat((torch.softmax(logits, dim=-1), values.unsqueeze(-1)), dim=1)
        self._output[:n].copy_(out, non_blocking=self.cuda)

    def rate(self, batch: int, seconds: float, rounds: int = 5) -> float:
        """Positions per second of back-to-back forward passes at `batch` (the bare forward
        pass, the server's roofline at its batch): the best of `rounds` timings of about
        `seconds / rounds` each, after two untimed passes (allocator, kernel selection). The
        best, because a neighbour's burst on a shared machine only ever slows a round down."""
        batch = max(1, min(batch, self.capacity))
        self.forward(batch)
        self.forward(batch)
        best = 0.0
        for _ in range(rounds):
            passes, start = 0, time.perf_counter()
            while True:
                self.forward(batch)
                passes += 1
                elapsed = time.perf_counter() - start
                if elapsed >= seconds / rounds:
                    break
            best = max(best, passes * batch / elapsed)
        return best
