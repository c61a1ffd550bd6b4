"""The local evaluator: the net in the calling process, on `device` (imports torch)."""

from __future__ import annotations

import numpy as np
import torch

from harness.probe import SuiteError
from suites.selfplay.net import NetConfig, build_net


def resolve_device(device: str) -> torch.device:
    """`auto` -> cuda when available, else cpu; `cuda` without CUDA is the user's error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise SuiteError(
            f"device=cuda but CUDA is not available here (torch {torch.__version__}, "
            f"built with CUDA {torch.version.cuda}); use device=cpu or device=auto"
        )
    if device not in ("cpu", "cuda"):
        raise SuiteError(f"device={device!r}: allowed are cpu, cuda, auto")
    return torch.device(device)


class LocalEvaluator:
    """Evaluates batches of planes with a net it holds; thread-safe for concurrent callers."""

    def __init__(self, net: torch.nn.Module, device: torch.device):
        self.device = device
        self.net = net.to(device).eval()

    @classmethod
    def build(
        cls, config: NetConfig, device: torch.device, seed: int = 0, state_dict: dict | None = None
    ) -> LocalEvaluator:
        return cls(build_net(config, seed, state_dict), device)

    @property
    def net_device(self) -> str:
        """Where the parameters actually are (what a worker reports back)."""
        return str(next(self.net.parameters()).device)

    def evaluate(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with torch.inference_mode():
            x = torch.from_numpy(np.ascontiguousarray(planes, dtype=np.float32)).to(self.device)
            logits, values = self.net(x)
            priors = torch.softmax(logits, dim=-1)
            return priors.cpu().numpy(), values.cpu().numpy()
