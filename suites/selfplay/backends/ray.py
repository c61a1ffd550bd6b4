"""ray: game actors play; the net is in one inference actor
(`ray_inference=server`, game actors stay torch-free) or in every game actor (`local`).

The suite's process is the Ray driver. It starts a private Ray for the run, or joins the
cluster it is already in (`suites.ray_session`), creates the actors, waits until every one
is up, starts all games at once, and then, as the other backends do through shared
memory, reads every actor's tally row (every `_PULL_S`) into one table for the probe, and
stops the games when the probe says so. Every actor is killed in a `finally:`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from harness.probe import SuiteError
from suites.ray_session import ray_session
from suites.selfplay.backends.accounting import Accounting, observe_server_stats
from suites.selfplay.backends.base import JOIN_TIMEOUT_S, POLL_S, START_TIMEOUT_S, Backend, Setup
from suites.selfplay.connect4 import COLUMNS, PLANES, ROWS
from suites.selfplay.net import portable_state
from suites.selfplay.play import TALLY_WIDTH

_PULL_S = 0.1  # how often the tallies travel from the actors (one small call per actor)


class RayBackend(Backend):
    """Game actors, and the net in one inference actor or in every game actor (`ray_inference`)."""

    def play(self, setup: Setup) -> set[str]:
        from suites.selfplay.ray_actors import GameActor, InferenceActor

        params = setup.params
        probe = setup.probe
        local = params.ray_inference == "local"
        n = len(setup.shares)
        gpus = 1 if setup.device.type == "cuda" else 0
        with ray_session(num_cpus=n + (0 if local else 1), num_gpus=gpus) as ray:
            server: Any = None
            actors: list[Any] = []
            try:
                state = ray.put(portable_state(setup.net))
                if not local:
                    server = (
                        ray.remote(InferenceActor)
                        .options(num_cpus=1, num_gpus=gpus, max_restarts=0, max_concurrency=max(1000, 4 * n))
                        .remote(
                            n,
                            setup.net_config,
                            state,
                            str(setup.device),
                            params.max_batch,
                            params.timeout_ms,
                            params.torch_threads,
                        )  # fmt: skip
                    )
                    (info,) = _wait_started(ray, [server.hello.remote((PLANES, ROWS, COLUMNS))])
                    probe.log(
                        f"selfplay: inference actor up ({info['device']}) after {time.perf_counter() - setup.started:.1f} s"
                    )
                game = ray.remote(GameActor).options(
                    num_cpus=1, num_gpus=gpus / n if local else 0, max_restarts=0, max_concurrency=2
                )
                for slot, games in enumerate(setup.shares):
                    net = (setup.net_config, state, str(setup.device)) if local else (None, None, "cpu")
                    actors.append(
                        game.remote(slot, setup.play_config, setup.seed(slot), games, setup.leaves, server, *net)
                    )
                hellos = _wait_started(ray, [a.hello.remote() for a in actors])
                heavy = [h for h in hellos if h["torch_loaded"]]
                if not local:
                    probe.set("workers_with_torch", len(heavy))
                    if heavy:
                        probe.warn(f"{len(heavy)} ray game actors have torch loaded: each costs hundreds of MB")
                tally = np.zeros((n, TALLY_WIDTH + setup.leaves + 1), dtype=np.int64)
                accounting = Accounting(
                    probe,
                    tally,
                    on_measure=server.measure.remote if server is not None else None,
                    on_stop=server.hold.remote if server is not None else None,
                )

                def pull() -> None:
                    tally[:] = np.stack(ray.get([a.tally.remote() for a in actors]))

                plays = [a.play.remote() for a in actors]
                setup.workers_up()

                def all_done() -> bool:
                    ready, _ = ray.wait(plays, num_returns=len(plays), timeout=0)
                    ray.get(ready)  # raises a game actor's error
                    return len(ready) == len(plays)

                last_pull = 0.0
                while True:
                    stop = probe.should_stop()
                    finished = not stop and all_done()
                    now = time.perf_counter()
                    if stop or finished or now - last_pull >= _PULL_S:
                        pull()
                        last_pull = now
                    accounting.update()
                    if finished:
                        probe.stop()  # fixed work done (and counted): shutting down counts in no rate
                        accounting.update()
                        stop = True
                    if stop:
                        break
                    ray.wait(plays, num_returns=len(plays), timeout=POLL_S)
                for actor in actors:
                    actor.stop.remote()
                ray.get(plays, timeout=JOIN_TIMEOUT_S)
                pull()
                stats = ray.get(server.stats.remote()) if server is not None else None
            finally:
                for actor in [*actors, server]:
                    if actor is not None:
                        ray.kill(actor)
        accounting.finish(observe_batches=local)
        accounting.report_work()
        if stats is not None:
            probe.set("batch_limit", params.max_batch)  # the batch the inference actor may fire
            observe_server_stats(probe, stats)
        probe.set("ray_inference", params.ray_inference)
        if local:
            return {h["device"] for h in hellos}
        return {info["device"]}


def _wait_started(ray: Any, hellos: list[Any]) -> list[Any]:
    """The actors' hellos; actors that a full cluster cannot place are an error, not a hang."""
    done, _ = ray.wait(hellos, num_returns=len(hellos), timeout=START_TIMEOUT_S)
    if len(done) < len(hellos):
        free = ray.available_resources().get("CPU", 0)
        raise SuiteError(
            f"backend=ray: only {len(done)} of {len(hellos)} actors started within {START_TIMEOUT_S:.0f} s "
            f"({free:g} CPUs free in the cluster): fewer workers, or a larger cluster"
        )
    return ray.get(hellos)
