"""A program that uses a GPU is seen (harness.monitors.gpu_use) and refused by harness ab (time
or counts), harness causal and harness tune, whatever its suite declares. These machines have
no GPU: a stand-in program maps a file named like the CUDA driver (libcuda.so.1), as a
program does when it initialises CUDA, and NVML's per-process list is injected."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

from harness.monitors import gpu_use as gpu

STAND_IN = textwrap.dedent(
    """
    import mmap, os, sys, time
    # what the CUDA driver leaves in /proc/PID/maps once a program has initialised CUDA
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libcuda.so.1")
    with open(path, "wb") as fh:
        fh.write(b"\\0" * mmap.PAGESIZE)
    with open(path, "rb") as fh:
        driver = mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ)
    print("ready", flush=True)
    n = 0
    while True:
        end = time.process_time() + 0.01
        while time.process_time() < end:
            pass
        n += 1
        print(f"Iteration {n} (90.0 iter/s)", flush=True)
    """
)


@pytest.fixture
def stand_in(tmp_path):
    (tmp_path / "gpu_prog.py").write_text(STAND_IN)
    proc = subprocess.Popen([sys.executable, "gpu_prog.py"], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    yield proc
    proc.kill()
    proc.wait()


def test_a_mapped_cuda_driver_is_use_of_a_gpu_where_nvml_cannot_be_asked(stand_in):
    use, note = gpu.gpu_use([stand_in.pid], listed=lambda: None)
    assert use is not None and not use.certain and note is None
    assert "mapped the GPU driver's library libcuda.so.1" in use.describe()
    assert "hide the GPU (CUDA_VISIBLE_DEVICES=)" in gpu.refusal(use, "it cannot be sliced")


def test_nvml_s_list_is_the_certain_sign_and_its_silence_a_note(stand_in):
    use, _ = gpu.gpu_use([stand_in.pid], listed=lambda: {stand_in.pid, 1})
    assert use is not None and use.certain and "holds a context on a GPU (NVML)" in use.describe()
    use, note = gpu.gpu_use([stand_in.pid], listed=set)
    assert use is None and "holds no context on a GPU" in note


def test_a_cpu_program_uses_no_gpu():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.2)
        assert gpu.gpu_use([proc.pid], listed=lambda: pytest.fail("NVML asked without a driver file")) == (None, None)
    finally:
        proc.kill()
        proc.wait()


def git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "dev")
    (repo / "gpu_prog.py").write_text(STAND_IN)
    (repo / ".gitignore").write_text("libcuda.so.1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "a trainer on the GPU")
    monkeypatch.chdir(repo)
    monkeypatch.setattr(gpu, "nvml_pids", lambda: None)  # as on a machine whose NVML cannot be read
    return repo


def test_ab_refuses_a_program_that_uses_a_gpu(cli, repo, tmp_path):
    result = cli("ab", "HEAD", "--out", tmp_path / "out", "--quiet", "--", sys.executable, "gpu_prog.py")
    assert result.exit_code == 2
    assert "uses a GPU" in result.output and "libcuda.so.1" in result.output
    assert "a time-sliced A/B cannot separate two sides that share it" in result.output


def test_causal_refuses_a_program_that_uses_a_gpu(cli, repo, tmp_path):
    result = cli("causal", "--budget", "60", "--out", tmp_path / "out", "--", sys.executable, "gpu_prog.py")
    assert result.exit_code == 2
    assert "uses a GPU" in result.output and "does not stop the work queued on the device" in result.output


@pytest.mark.slow
def test_tune_never_time_slices_a_program_that_uses_a_gpu(cli, repo, tmp_path):
    """A tune's readings are plain runs of the program, right on a GPU as a sweep's are; its
    A/Bs (between leaders, and the winner's against the start) time-slice it, and are refused.
    Whether one is needed depends on the readings (this stand-in reads alike at both settings):
    either the tune is refused naming the GPU, or it ended on readings alone with the start
    kept and nothing sliced."""
    result = cli("tune", "--knob", "workers=1,2", "--budget", "400", "--out", tmp_path / "out", "--", sys.executable,
                 "gpu_prog.py", "--workers", "{workers}")  # fmt: skip
    if result.exit_code == 2:
        assert "uses a GPU" in result.output
        return
    assert result.exit_code == 0, result.output
    trail = json.loads(next((tmp_path / "out").glob("*/tune.json")).read_text())
    assert trail["final"] is None and "the start stays" in result.output
    assert not (trail.get("halving") or {}).get("duels")  # no leaders' A/B either


def test_a_counted_run_refuses_a_program_that_uses_a_gpu(tmp_path, monkeypatch):
    """Natively (the pilot's plumbing, no valgrind needed): refused at the window's start."""
    from harness.count.window import Plan, counted_run
    from harness.errors import UserError

    monkeypatch.setattr(gpu, "nvml_pids", lambda: None)
    (tmp_path / "gpu_prog.py").write_text(STAND_IN)
    with pytest.raises(UserError, match="invisible to an instruction counter"):
        counted_run([sys.executable, "gpu_prog.py"], tmp_path, tmp_path / "out", Plan(min_half_s=0.0), "pilot",
                    tool="none")  # fmt: skip
