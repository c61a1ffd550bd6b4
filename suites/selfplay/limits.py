"""The self-play net's forward pass as a limit benchmark: evals/s per batch size.

`harness limits` times `time_forward` in pyperf's worker processes at every batch size, on
the same network the suite plays with; reports then show a self-play cell's nn_evals/s as a
percentage of this curve at the cell's mean batch (how far the inference path is from a
bare forward pass). Importing this module is cheap: torch loads inside the timed function.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.probe import LimitBenchmark

_state: dict[str, Any] = {}  # per pyperf worker: the net, built on first use


class ForwardOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    device: Literal["cpu", "cuda"] = Field("cpu", description="where the net runs")
    blocks: int = Field(2, ge=0, le=40, description="residual blocks of the net")
    channels: int = Field(32, ge=1, le=512, description="channels of the net's convolutions")
    threads: int = Field(0, ge=0, description="torch intra-op threads (0 = torch's default)")

    @model_validator(mode="after")
    def _cuda_present(self) -> ForwardOptions:
        if self.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise ValueError("device=cuda: torch sees no CUDA device here; use device=cpu")
        return self


def time_forward(loops: int, batch: int, options: Mapping[str, Any]) -> float:
    """Seconds for `loops` forward passes of a batch of `batch` positions."""
    import torch

    from suites.selfplay.connect4 import COLUMNS, PLANES, ROWS
    from suites.selfplay.net import NetConfig, build_net

    device = options.get("device", "cpu")
    if "net" not in _state:
        if options.get("threads", 0) > 0:
            torch.set_num_threads(int(options["threads"]))
        config = NetConfig(blocks=int(options.get("blocks", 2)), channels=int(options.get("channels", 32)))
        _state["net"] = build_net(config).to(device)
    net = _state["net"]
    x = torch.zeros(batch, PLANES, ROWS, COLUMNS, device=device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    with torch.inference_mode():
        net(x)  # first call of this shape: allocator and kernel selection
        sync()
        t0 = time.perf_counter()
        for _ in range(loops):
            net(x)
        sync()
        return time.perf_counter() - t0


def applies(cell: Mapping[str, Any], options: Mapping[str, Any]) -> bool:
    """A curve describes a cell that plays with the same net on the same device."""
    same_net = cell.get("blocks") == options.get("blocks") and cell.get("channels") == options.get("channels")
    return same_net and cell.get("device", "cpu") in ("auto", options.get("device"))


FORWARD = LimitBenchmark(
    name="forward",
    description="one forward pass of the self-play policy-value net per batch size",
    options=ForwardOptions,
    time="suites.selfplay.limits:time_forward",
    sizes=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
    unit="evals",
    achieved="nn_evals_per_s",
    at="batch_mean",
    applies=applies,
)
