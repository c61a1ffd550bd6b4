"""The Ray executor gives the same rows as the local one and leaves no Ray process behind."""

import psutil
import pytest

from harness.errors import UserError
from tests.conftest import read_records, run_dirs

ray = pytest.importorskip("ray", reason="ray is an optional extra: pip install -e '.[ray]'")

RAY_PROCESS_NAMES = ("raylet", "gcs_server", "ray::", "default_worker.py", "plasma_store")


def ray_processes() -> list[str]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            line = " ".join(proc.info["cmdline"] or [])
        except psutil.Error:
            continue
        if any(name in line for name in RAY_PROCESS_NAMES):
            found.append(line[:120])
    return found


def rows(run_dir):
    return sorted(
        (r["id"], r["repeat"], r["status"], r["metrics"].get("work_done"), r["metrics"].get("work_requested"))
        for r in read_records(run_dir)
    )


@pytest.mark.slow
def test_ray_sweep_matches_local_rows_and_cleans_up(cli, tmp_path):
    args = ["sweep", "--suite", "synthetic", "--workers", "1,2", "--set", "slowdown=1,2", "--work", "20", "--quiet"]
    assert cli(*args, "--out", tmp_path / "local").exit_code == 0
    result = cli(*args, "--out", tmp_path / "ray", "--executor", "ray")
    assert result.exit_code == 0, result.output
    (local_dir,) = run_dirs(tmp_path / "local")
    (ray_dir,) = run_dirs(tmp_path / "ray")
    assert rows(ray_dir) == rows(local_dir)
    assert len(rows(ray_dir)) == 4 and all(row[3] == 20 for row in rows(ray_dir))
    record = read_records(ray_dir)[0]
    assert (ray_dir / record["series"]).is_file() and (ray_dir / record["log"]).is_file()
    assert ray_processes() == []


def test_cells_that_cannot_fit_are_refused_up_front():
    from harness.running.executors.ray import refuse_what_cannot_fit
    from harness.running.matrix import Overrides, Spec, apply_overrides, expand

    cells = expand(apply_overrides(Spec(), Overrides(suite="synthetic", axes={"workers": ["1", "3"]})))
    with pytest.raises(UserError, match="cannot fit one node"):
        refuse_what_cannot_fit(cells, [{"CPU": 2.0}, {"CPU": 2.0}])  # 4 CPUs, but a bundle is packed on one node
    refuse_what_cannot_fit(cells[:1], [{"CPU": 2.0}])
    refuse_what_cannot_fit(cells, [{"CPU": 1.0}, {"CPU": 4.0}])
