"""What a selfplay backend is: where the games run and where the net runs.

Every backend plays games with the same code (`play.play_games`, through
`workers.run_worker` or a Ray game actor) and differs only in where. The driver
(driver.py) builds the net and a `Setup`, then calls `Backend().play(setup)`, which must:

- play `setup.shares[w]` games in worker w (None: until the probe says stop), seeding
  worker w's games with `setup.seed(w)` and searching with `setup.play_config`;
- call `setup.workers_up()` once every worker is ready to play (the clock's warm-up
  starts there, start-up is not measured);
- count games, moves and evaluations into the probe while they run and stop when
  `probe.should_stop()` says so, or close the window with `probe.stop()` once fixed work is
  done (`accounting.Accounting` and `accounting.supervise` do both from tally rows);
- report the work (`Accounting.report_work`) and the batch sizes evaluated;
- stop and reap every process, thread or actor it started, in a `finally:`;
- return the devices its nets ran on (the driver fails the run when one is not the
  device asked for).

Register a new backend in `backends/__init__.py` (or, from outside the suite, with
`BACKENDS.add` in a HARNESS_PLUGINS module).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import torch

    from harness.probe import Probe
    from suites.selfplay.net import NetConfig
    from suites.selfplay.play import PlayConfig

POLL_S = 0.05  # how often a backend's main loop counts and checks the stop signal
START_TIMEOUT_S = 600.0  # 128 spawned workers on 2 busy cores take a while
JOIN_TIMEOUT_S = 60.0  # for workers told to stop to finish their move and exit


@dataclass
class Setup:
    """What a backend gets: the knobs, the probe, the resolved device and the net."""

    params: Any
    probe: Probe
    device: torch.device
    net_config: NetConfig
    play_config: PlayConfig
    net: torch.nn.Module
    shares: list[int | None]  # games per worker (None: until told to stop)
    started: float  # perf_counter when run began

    def workers_up(self) -> None:
        """Workers are playing: record the start-up time and begin the warm-up."""
        startup = time.perf_counter() - self.started
        self.probe.set("startup_s", round(startup, 3))
        self.probe.log(f"selfplay: {len(self.shares)} {self.params.backend} workers up in {startup:.1f} s")
        self.probe.phase("warmup")

    def seed(self, worker: int) -> int:
        return self.params.seed * 100_003 + worker

    @property
    def leaves(self) -> int:
        return self.params.leaves


class Backend:
    """The protocol; subclass it and register the class."""

    single_worker: ClassVar[bool] = False  # one game loop: the driver ignores `workers`
    net_in_main_process: ClassVar[bool] = False  # the net runs here: `torch_threads` applies to this process

    def play(self, setup: Setup) -> set[str]:
        """Play the games (module docstring); return the devices the nets ran on."""
        raise NotImplementedError
