"""Cells as Ray tasks, for sweeps larger than one machine.

Each cell-repeat becomes a task inside its own placement group, a single bundle holding
the CPUs the cell declares (its workers plus servers, `Suite.resources_for`) and a GPU
when it asks for cuda; STRICT_PACK keeps the bundle on one node, where the task runs the
very same CellRunner as the local executor (fresh interpreter, own process session,
deadline, monitors) against a scratch run directory. The task returns the record and the
files the cell produced; the driver alone writes the real store, so cells.jsonl keeps one
writer. A cell that could never fit the cluster is refused before anything starts,
instead of waiting forever for resources.

Without `--address` a private Ray is started on this machine, bound to loopback with the
dashboard off, and shut down afterwards.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import ray
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from harness.errors import UserError
from harness.model.registry import get_suite
from harness.model.suite import Resources
from harness.running import interrupts
from harness.running.executors.base import Job, OnRecord, OnStart
from harness.running.matrix import Cell
from harness.running.runner import CellRunner
from harness.runs.files import write_atomic
from harness.runs.record import Record
from harness.runs.store import CELLS_FILE, RUN_FILE, RunStore

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def cell_resources(cell: Cell) -> Resources:
    suite = get_suite(cell.suite)
    declared = suite.resources_for(suite.params.model_validate(cell.params))
    device = suite.words.device
    gpus = declared.gpus or (1 if device and str(cell.params.get(device, "")).startswith("cuda") else 0)
    return Resources(cpus=max(1, declared.cpus), gpus=gpus)


def refuse_what_cannot_fit(cells: list[Cell], cluster: dict[str, float]) -> None:
    cpus, gpus = cluster.get("CPU", 0), cluster.get("GPU", 0)
    misfits = []
    for cell in cells:
        need = cell_resources(cell)
        if need.cpus > cpus or need.gpus > gpus:
            misfits.append(f"{cell.suite} {cell.id} needs {need.cpus} CPU/{need.gpus} GPU")
    if misfits:
        raise UserError(
            f"the Ray cluster has {cpus:g} CPU and {gpus:g} GPU; these cells cannot fit and would wait "
            f"forever: {'; '.join(misfits)}. Add nodes, or run them with --executor local"
        )


def run_cell_remotely(cell_json: dict[str, Any], repeat: int) -> tuple[Record, dict[str, bytes]]:
    """Runs on a Ray worker: one cell in a scratch run directory; returns record and files."""
    scratch = Path(tempfile.mkdtemp(prefix="harness-ray-"))
    try:
        store = RunStore.create(scratch, "ray", {})
        record = CellRunner(store).run(Cell.from_json(cell_json), repeat)
        files = {
            str(path.relative_to(store.root)): path.read_bytes()
            for path in store.root.rglob("*")
            if path.is_file() and path.name not in (RUN_FILE, CELLS_FILE)
        }
        return record, files
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


class RayExecutor:
    def __init__(self, address: str | None = None) -> None:
        self.address = address

    def _connect(self) -> None:
        if self.address:
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(
                _node_ip_address="127.0.0.1",
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"env_vars": {"PYTHONPATH": _PACKAGE_ROOT}},
            )

    def run(self, jobs: list[Job], store: RunStore, on_start: OnStart, on_record: OnRecord) -> None:
        if not jobs:
            return
        self._connect()
        try:
            refuse_what_cannot_fit(list({cell.id: cell for cell, _ in jobs}.values()), ray.cluster_resources())
            task = ray.remote(run_cell_remotely)
            pending: dict[Any, Any] = {}
            for cell, repeat in jobs:
                need = cell_resources(cell)
                bundle = {"CPU": need.cpus, **({"GPU": need.gpus} if need.gpus else {})}
                group = placement_group([bundle], strategy="STRICT_PACK")
                ref = task.options(
                    num_cpus=need.cpus,
                    num_gpus=need.gpus,
                    max_retries=0,
                    scheduling_strategy=PlacementGroupSchedulingStrategy(group),
                ).remote(cell.to_json(), repeat)
                pending[ref] = group
                on_start(cell, repeat)
            try:
                while pending:
                    interrupts.check()
                    done, _ = ray.wait(list(pending), num_returns=1, timeout=interrupts.POLL_S)
                    if not done:
                        continue
                    ref = done[0]
                    remove_placement_group(pending.pop(ref))
                    record, files = ray.get(ref)
                    for relative, content in files.items():
                        target = store.root / relative
                        target.parent.mkdir(parents=True, exist_ok=True)
                        write_atomic(target, content, "a file of the cell")
                    on_record(record)
            except BaseException:
                # A polite cancel raises KeyboardInterrupt inside each task, whose CellRunner
                # then ends its cell's process tree before the task returns.
                for ref in pending:
                    ray.cancel(ref, force=False)
                ray.wait(list(pending), num_returns=len(pending), timeout=15)
                raise
        finally:
            ray.shutdown()
