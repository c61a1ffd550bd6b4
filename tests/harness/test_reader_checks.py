"""What a counter's readings add (a running total is never summed), which of a name's
reports is counted, and the checks that keep a misread counter out of the headline.

Each case is the shape of a real program's output (tests/corpus/ holds the captures)."""

from __future__ import annotations

import re

import pytest

from harness.readers import Feed, line_readers
from harness.readers.sentences import Sentences
from harness.readers.series import Series
from harness.readers.words import family, kind_of, rank, rate_unit, unit_of
from tests.harness.test_readers import FakeProbe

TIANSHOU = (
    "Epoch #1:   1%|1         | {n}/10000 [00:{s:02d}<06:00, 27.36it/s, env_episode={ep}, env_step={step}, "
    "n_ep=0, n_st=10, update_step={upd}]\x1b[A"
)


def feed_at(lines: list[tuple[float, str]], **kwargs) -> tuple[FakeProbe, Feed]:
    probe, t = FakeProbe(), [0.0]
    feed = Feed(probe, line_readers(), clock=lambda: t[0], **kwargs)
    for when, text in lines:
        t[0] = when
        feed.line(text)
    feed.finish()
    return probe, feed


def test_a_comma_ends_a_count():
    """tianshou's postfix: `env_episode=10, env_step=130` read env_step as 10 too (the 10 and its
    comma, then the next word), so env_step jumped between 10 and 130."""
    line = TIANSHOU.format(n=140, s=4, ep=10, step=130, upd=13)
    readings = [(r.name, r.value) for r in Sentences().read(line) if r.kind == "counter"]
    assert ("env_step", 10.0) not in readings and ("update_step", 10.0) not in readings
    assert ("env_step", 130.0) in readings and ("update_step", 13.0) in readings


def test_a_number_inside_a_name_is_no_count():
    """DI-engine: `learner save ckpt in ./ckpt/iteration_40.pth.tar` is a file, not 40 iterations."""
    assert Sentences().read("learner save ckpt in ./cartpole/ckpt/iteration_40.pth.tar") == []
    assert [r.value for r in Sentences().read("=== Training Iteration 100 Result ===")] == [100.0]


def test_counter_words_and_units():
    assert kind_of("total_envstep_count") == kind_of("episode_count") == kind_of("env_step") == "counter"
    assert kind_of("avg_envstep_per_sec") == "rate" and kind_of("n_st") == kind_of("total_loss") == "value"
    assert unit_of("total_envstep_count") == unit_of("env_step") == "steps"
    assert unit_of("update_step") == unit_of("train_iter") == "updates"  # a learner's steps are not the env's
    assert family("total_timesteps") == family("env_step") == "steps"
    assert rate_unit("printed_avg_envstep_per_sec") == "steps" and rate_unit("printed_it_per_s") == "iterations"
    assert rank("env_step") < rank("update_step") < rank("total_episode_count")


def test_a_running_total_is_never_summed():
    """A level that dips (a line from another report, a glitch) counts only its growth: the old
    feed took every fall for a restart and counted the new value in full."""
    series = Series("env_step", "", "pairs", "env_step")
    added = [series.see(v, "measure") for v in (100, 200, 150, 300, 290, 400)]
    assert sum(added) == 300 and series.kind == "level" and series.falls == 2
    assert series.undecided  # it dropped twice: kept out of the headline while another counter is sure


def test_a_restart_is_a_fall_to_near_zero_that_grows_again():
    series = Series("iterations", "bar", "progress_bar", "it")
    added = [series.see(v, "measure") for v in (100, 200, 200, 0, 0, 50, 150)]
    assert sum(added) == 100 + 150 and series.restarts == 1  # the redraws at 200 and 0 add nothing
    back = Series("iterations", "bar", "progress_bar", "it")
    assert sum(back.see(v, "measure") for v in (100, 200, 3, 210)) == 110  # fell and came back: no restart
    assert back.restarts == 0


def test_increments_are_summed_once_the_evidence_says_so():
    """DI-engine's `envstep_count: 99` is this collection's steps: up and down, bounded."""
    probe, t = FakeProbe(), [0.0]
    feed = Feed(probe, line_readers(), clock=lambda: t[0])
    for i, n in enumerate((99, 215, 106, 160, 130, 170)):
        t[0] = float(i)
        feed.line(f"                          envstep_count: {n}")
    series = feed.series_of("envstep_count")
    assert series.kind == "increments"
    # every report counts, the first too (its steps were collected before it); once judged,
    # the readings before count as increments
    assert probe.counts["envstep_count"] == 99 + 215 + 106 + 160 + 130 + 170


def test_two_running_totals_taking_turns_are_kept_out_of_the_headline():
    probe, _ = feed_at([(float(i), f"steps={1000 + 10 * i if i % 2 else 800 + 10 * i}") for i in range(12)])
    assert probe.declared == ["steps"]  # the only counter, so still named, but
    assert "two running totals" in probe.values["progress_set_aside"]
    assert probe.values["headline_check"] == "failed"


def test_two_bars_sharing_a_key_are_two_series():
    """An outer epoch bar (2/10) and the inner batch bar (1032/10000), both counting `it`,
    redrawn in turns: the old feed summed both as restarts of one counter."""
    lines = []
    for i in range(40):
        lines.append((i * 0.5, f"Training:  20%|##  | 2/10 [00:{i // 2:02d}<00:40, 0.10it/s]"))
        lines.append((i * 0.5 + 0.01, f"Epoch 2:  10%|#   | {1000 + 50 * i}/10000 [00:{i // 2:02d}<01:30, 100.00it/s]"))
    probe, feed = feed_at(lines)
    assert probe.counts["iterations"] == 50 * 39  # the inner bar's growth alone
    assert probe.values["iterations_per_s"] == pytest.approx(100, rel=0.01)
    assert "1 other report of it not counted" in probe.values["headline_provenance"]


def test_a_warning_line_is_not_a_progress_report():
    """DI-engine warns `current buffer is 8 while sample is 64`; a replay buffer's warning once
    gave the headline ("64 transitions")."""
    probe, feed = feed_at(
        [
            (0.0, "[11-25 16:16:50] WARNING  Replay buffer holds 64 transitions, sample is 64   deque_buffer.py:160"),
            (1.0, "UserWarning: only 128 transitions collected"),
            (2.0, "W1125 16:16:50.1 x.py:3] 256 transitions dropped"),
            (3.0, "[11-25 16:16:52] WARNING  Replay buffer holds 512 transitions   deque_buffer.py:160"),
            (4.0, "[11-25 16:56:39] WARNING  The data in replay_buffer is not sufficient:   train_muzero.py:204"),
            (4.0, "                          num of game segments: 8, number of transitions: 141 continue"),
            (5.0, "[11-25 16:56:40] INFO     collect end:"),
            (5.0, "                          total_envstep_count: 224"),
            (6.0, "[11-25 16:56:41] INFO     collect end:"),
            (6.0, "                          total_envstep_count: 324"),
        ]
    )
    assert probe.counts == {"total_envstep_count": 100} and feed.lines_not_progress == 6


def test_a_counter_read_faster_than_its_printed_rate_is_set_aside():
    """The issue's case: a counter counted at 1,600x the program's own rate of the same thing
    must not be the headline, and the record says why."""
    lines = []
    for i in range(30):
        t = float(i)
        # frames misread at 10x; steps right; the program prints its own frame rate, 100 fps
        lines.append((t, f"frames={1000 * i} steps={100 * i} fps=100"))
    probe, feed = feed_at(lines)
    assert probe.declared[-1] == "steps"  # frames are finer, but read 10x too fast
    assert "frames: read faster than printed fps" in probe.values["progress_set_aside"]
    assert any("frames grew at 1000/s" in w and "not the headline" in w for w in probe.warnings)
    assert probe.values["headline_check"] == "passed"  # steps agree with the unitless fps


def test_a_counter_read_slower_than_a_printed_rate_keeps_its_place_with_a_warning():
    """DI-engine's avg_envstep_per_sec is over the collection phase alone: 35x the wall rate."""
    lines = [(float(i), f"total_envstep_count: {160 * i}  avg_envstep_per_sec: 528.3") for i in range(20)]
    probe, feed = feed_at(lines)
    assert probe.declared[-1] == "total_envstep_count" and probe.values["headline_check"] == "warned"
    assert any("over part of the time" in w and "528.3" in w for w in probe.warnings)


def test_the_programs_clock_checks_the_harnesss():
    """tqdm's elapsed beside its count: lines that reach the harness in bursts (a buffered pipe)
    make its rate disagree with the program's own clock."""
    steady = [(i * 0.5, f"{100 * i}/9999 [00:{i // 2:02d}<01:00, 200.00it/s]") for i in range(60)]
    probe, feed = feed_at(steady)
    (clock,) = [c for c in feed.checks["iterations"] if "clock" in c.source]
    assert clock.outcome == "agrees" and probe.values["headline_check"] == "passed"
    bursts = [(float(i // 10 * 5), text) for i, (_, text) in enumerate(steady)]  # 10 lines at once, every 5 s
    probe, feed = feed_at(bursts)
    assert any("clock" in c.source for c in feed.checks["iterations"])


def test_each_counted_rate_carries_its_provenance():
    lines = [(i * 0.5, TIANSHOU.format(n=10 * i, s=i // 2, ep=i, step=10 * i, upd=i)) for i in range(1, 60)]
    probe, feed = feed_at(lines)
    provenance = probe.values["headline_provenance"]
    assert probe.declared[-1] == "env_step"
    assert provenance.startswith("env_step_per_s 20/s from `env_step` (sentences), a level, ")
    assert "checks:" in provenance and "update_step_per_s" in probe.values["progress_provenance"]


def test_the_report_shows_the_headlines_provenance_and_a_failed_check(tmp_path):
    """One line under the table (terminal and report.html); a cell whose headline failed its
    checks says so beside its rate."""
    import io

    from rich.console import Console

    from harness.report.html import render_run
    from harness.report.terminal import render
    from harness.runs.view import build_view
    from tests.records import make_record

    said = "env_step_per_s 26.1/s from `env_step` (sentences), a level, 97 sightings; checks: ..."
    records = [
        make_record(
            f"c{w}",
            {"env_step_per_s": 26.0 * w, "headline_rate": "env_step_per_s", "headline_provenance": said,
             "headline_check": "failed" if w == 4 else "passed", "progress_set_aside": "env_step: read faster than"},
            {"argv": "python train.py {workers}", "workers": w},
            suite="command",
        )
        for w in (1, 2, 4)
    ]  # fmt: skip
    view = build_view(records)
    out = io.StringIO()
    render(view, Console(file=out, width=400))
    text = out.getvalue()
    assert "headline env_step_per_s: from `env_step` (sentences), a level; its checks passed in 2 cells" in text
    assert "failed in 1 cell" in text and "104 (check failed)" in text and "52 (check failed)" not in text
    page = render_run(tmp_path, view)
    assert "its checks passed in 2 cells, failed in 1 cell" in page and "(check failed)</span>" in page


def test_the_report_that_keeps_growing_is_counted():
    """Sample Factory prints `Decorrelating experience for 32 frames` before its first `Total num
    frames: 1024.`: the first report of `frames` to grow is not its progress."""
    lines = [
        (0.0, "[12971] Decorrelating experience for 0 frames..."),
        (0.1, "[12971] Decorrelating experience for 32 frames..."),
    ]
    lines += [
        (1.0 + i, f"[11403] Fps is (10 sec: 204.5). Total num frames: {1024 * i}. Samples: {1600 * i}.")
        for i in range(30)
    ]
    probe, feed = feed_at(lines)
    assert probe.declared[-1] == "frames"
    assert probe.values["frames_per_s"] == pytest.approx(1024, rel=0.01)
    assert "1 other report of it not counted" in probe.values["headline_provenance"]


def test_short_bars_do_not_read_the_programs_clock():
    """Lightning's epoch bars last about a second and print whole seconds (`[00:00<00:00`): summed,
    their clock read half the time that passed and the check called the harness 0.52x."""
    lines, t = [], 0.0
    for epoch in range(40):
        for n in range(0, 33, 4):
            lines.append((t, f"Epoch {epoch}: {n}/32 [00:0{int(n / 32 * 1.5)}<00:00, 21.33it/s, v_num=0]"))
            t += 1.5 / 8
    probe, feed = feed_at(lines)
    assert not any("clock" in c.source for c in feed.checks["iterations"])


def test_a_lagging_average_does_not_set_aside_a_counter_its_clock_agrees_with():
    """Stable-Baselines3's `fps` is total_timesteps / time_elapsed since the start: after a slow
    start it lags the counter by 2x and more, while time_elapsed itself agrees with it."""
    lines = []
    for i in range(1, 40):
        steps = 1000 * i if i > 5 else 100 * i  # a slow start, then 1000 steps/s
        elapsed = i
        lines.append((float(i), f"|    fps             | {steps // max(elapsed, 1) // 3} |"))
        lines.append((float(i), f"|    time_elapsed    | {elapsed} |"))
        lines.append((float(i), f"|    total_timesteps | {steps} |"))
    probe, feed = feed_at(lines)
    outcomes = {c.source.split(" ")[0]: c.outcome for c in feed.checks["total_timesteps"]}
    assert outcomes == {"printed": "set aside", "growth": "agrees"}
    assert probe.declared[-1] == "total_timesteps" and "progress_set_aside" not in probe.values


def test_a_validation_bar_between_epochs_is_not_the_training():
    """Lightning: a sanity-check bar (2/2) first, then each epoch's training bar (64 batches) and
    the validation bar (64) under it, both counting `it`: the training bar is counted."""
    lines, t = [(0.0, "Sanity Checking DataLoader 0:  50%| | 1/2 [00:00<00:00, 90.00it/s]")], 0.1
    lines.append((t, "Sanity Checking DataLoader 0: 100%| | 2/2 [00:00<00:00, 95.00it/s]"))
    for epoch in range(30):
        for n in range(0, 65, 8):
            t += 0.1
            lines.append((t, f"Epoch {epoch}:  50%|#| {n}/64 [00:00<00:00, 400.00it/s, v_num=0]"))
        for n in range(0, 65, 16):
            t += 0.02
            lines.append((t, f"Validation DataLoader 0: 50%|#| {n}/64 [00:00<00:00, 2000.00it/s]\x1b[A"))
    probe, feed = feed_at(lines)
    assert feed.series_of("iterations").slot == "output:bar Epoch/64"
    assert probe.values["iterations_per_s"] == pytest.approx(64 / (0.9 + 0.1), rel=0.05)


def test_a_counter_reported_too_seldom_says_so():
    """Stable-Baselines3 with one env on a loaded machine: a table every 20 s, three in a 40 s
    window: the rate is the probe's, over reports the window's edges cut, and the record says so."""
    probe, feed = feed_at([(0.0, "|    total_timesteps | 500 |"), (20.0, "|    total_timesteps | 1000 |")])
    assert probe.values["headline_check"] == "few reports"
    from harness.runs.provenance import cell_note
    from tests.records import make_record

    assert cell_note([make_record("c", {"headline_check": "few reports"})]) == "few reports"
    assert cell_note([make_record("c", {"headline_check": "passed"})]) is None


def test_a_redrawn_number_is_not_when_it_was_reached():
    """tianshou prints the bar's new count first, its postfix's env_step one collection behind,
    then the same line with env_step caught up: a rate or a clock taken at the redraws lags by a
    collection (the clock check read the harness 1.31x in a real sweep)."""
    lines = []
    for k in range(1, 12):
        t, clock = 9.0 * k, 9 * k
        bar = (
            f"Epoch #1:   1%| | {256 * k}/30000 [{clock // 60:02d}:{clock % 60:02d}<20:00, 28.0it/s, env_episode={k}, "
        )
        lines.append((t, bar + f"env_step={256 * (k - 1)}, n_st=256, update_step={k - 1}]"))
        lines.append((t + 0.01, bar + f"env_step={256 * k}, n_st=256, update_step={k}]"))
    probe, feed = feed_at(lines)
    assert probe.values["env_step_per_s"] == pytest.approx(256 / 9, rel=0.01)
    (clock,) = [c for c in feed.checks["env_step"] if "clock" in c.source]
    assert clock.outcome == "agrees"


def test_a_trainers_silent_update_phase_is_in_its_rate():
    """sheeprl reports an episode's end while it collects (many lines a second), then nothing while
    it trains (15 s): a window that ends in the silence, or opens in it, holds no progress there."""
    from harness.readers.series import Series

    series = Series("policy_step", "", "sentences", "policy_step")
    t, step = 0.0, 0
    for _ in range(3):  # collect 500 steps in 5 s, then train for 15 s
        for _ in range(50):
            t, step = t + 0.1, step + 10
            series.see(step, "measure", t)
        t += 15.0
    # without the window's edges: from its first change (20 at 0.2 s) to its last (1500 at 45 s)
    assert series.window_rate() == pytest.approx(1480 / 44.8, rel=0.001)
    # a window to 60 s: the last 15 s are an update phase, no progress, and in the rate
    assert series.window_rate(start=0.0, end=60.0) == pytest.approx(1480 / 59.8, rel=0.001)


def _capture(path, chunks: list[tuple[float, str]], stream: str = "err"):
    """A capture file of `chunks` (time, text), as benchmarks/capture_output.py writes one."""
    import json

    with open(path, "w") as out:
        out.write(json.dumps({"capture": 1, "argv": ["train.py"]}) + "\n")
        for when, text in chunks:
            out.write(json.dumps({"t": when, "s": stream, "d": text}) + "\n")
    return path


def test_what_was_read_before_the_first_growth_is_not_in_the_window(tmp_path):
    """torchrl's SAC prints its bar at `0/1000000 [00:00<?` after 12 s of start-up (the probe,
    past its 10 s warm-up cap with nothing counted, had begun measuring), then fills 1,000
    random-action frames at 500/s and trains at 100 frames/s. The first growth restarts the
    warm-up; the bar at 0 stayed a reading of the window, and the clock check ran from it,
    over the fast phase: 0.70x, warned, where the program's clock agrees with the harness."""
    from harness.program.capture import replay_cell

    chunks = [(12.0, "  0%|  | 0/1000000 [00:00<?, ?it/s]")]
    t, n = 12.0, 0
    while t < 70.0:
        step = 0.2 if n < 1000 else 1.0  # 100 frames a step: 500/s, then 100/s
        t, n = t + step, n + 100
        chunks.append((t, f"  0%|  | {n}/1000000 [00:{int(t - 12.0):02d}<2:00:00, 100.00it/s]"))
    path = _capture(tmp_path / "sac.jsonl", [(when, "\r" + text) for when, text in chunks])
    metrics, _ = replay_cell(path, 20.0)
    start, end = metrics["replay_window"]
    assert start > 14.0 and metrics["iterations_per_s"] == pytest.approx(100.0, rel=0.02)
    assert metrics["headline_check"] == "passed", metrics["headline_provenance"]


def test_a_window_opening_in_a_stall_reads_the_clock_over_the_same_stretch(tmp_path):
    """Stable-Baselines3 stalled 18 s on its own (time_elapsed 10 -> 28 for one table) as the
    window opened: the harness's rate runs from the window's start, its level interpolated from
    the table before; the clock check, from the window's tables alone, read only the fast part
    after the stall (300/s against 195: 0.65x). Over the same stretch it agrees."""
    from harness.program.capture import replay_cell

    chunks, steps = [], 0
    for t in [float(k) for k in range(10, 15)] + [32.0 + k for k in range(40)]:
        steps += 100
        chunks.append((t, f"|    time_elapsed    | {int(t - 10)} |\n|    total_timesteps | {steps} |\n"))
    metrics, _ = replay_cell(_capture(tmp_path / "sb3.jsonl", chunks, "out"), 30.0)
    start, end = metrics["replay_window"]
    assert 14.0 < start < 32.0 - 3.0  # opened in the stall
    rate = metrics["total_timesteps_per_s"]
    (check,) = re.findall(r"clock \(\d+ s\) ([\d.]+)/s: [\d.]+x, (\w+)", metrics["headline_provenance"])
    assert check[1] == "agrees" and float(check[0]) == pytest.approx(rate, rel=0.10), metrics["headline_provenance"]


# ------------------------------------------------------------------ a torch.distributed job
def test_a_rank_is_read_from_its_environment():
    from harness.program.distributed import rank_of

    assert rank_of({"WORLD_SIZE": "4", "LOCAL_RANK": "2"}) == (4, 2)
    assert rank_of({"WORLD_SIZE": "4", "RANK": "0", "LOCAL_RANK": "0"}) == (4, 0)
    assert rank_of({"WORLD_SIZE": "1", "RANK": "0"}) is None  # a job of one process prints all of it
    assert rank_of({"WORLD_SIZE": "4"}) is None and rank_of({"LOCAL_RANK": "1"}) is None
    assert rank_of({"WORLD_SIZE": "four", "RANK": "1"}) is None and rank_of({"WORLD_SIZE": "2", "RANK": "5"}) is None


@pytest.mark.slow
def test_a_torch_distributed_jobs_rate_is_said_to_be_one_ranks(cli, tmp_path):
    """Lightning's DDP prints rank 0's bar: its rate is one rank's, and every place that shows
    it says so (the record's warning, the rate's note, the provenance line, NEGATIVE_SCALING)."""
    import io
    import sys
    from pathlib import Path

    from rich.console import Console

    from harness.diagnosis import diagnose
    from harness.report.terminal import render
    from harness.runs.store import RunStore
    from harness.runs.view import build_view
    from tests.conftest import read_records, run_dirs

    program = Path(__file__).resolve().parents[1] / "programs" / "ddp_ranks.py"
    out = tmp_path / "out"
    args = ("sweep", "--workers", "1,3", "--duration", "4", "--steady", "off", "--out", out, "--quiet")
    result = cli(*args, "--", sys.executable, str(program), "{workers}")
    assert result.exit_code == 0, result.output
    (run,) = run_dirs(out)
    by_workers = {r["params"]["workers"]: r for r in read_records(run)}
    assert by_workers[3]["metrics"]["program_world_size"] == 3
    assert any("torch.distributed job of 3 processes" in w for w in by_workers[3]["warnings"])
    assert "program_world_size" not in by_workers[1]["metrics"]
    store = RunStore.open(run)
    text = io.StringIO()
    render(build_view(store.records()), Console(file=text, width=400))
    assert "(one rank of 3)" in text.getvalue() and "torch.distributed job (3 ranks)" in text.getvalue()
    # on 2 cores, 3 ranks each run at about 2/3 of one: a drop of the printed rate, not of the job
    scaling = [f for f in diagnose(store.records(), store.meta()) if f.rule == "NEGATIVE_SCALING"]
    (finding,) = scaling
    assert "one rank's of a torch.distributed job (1 and 3 ranks)" in finding.hint


@pytest.mark.slow
def test_harness_watch_says_a_distributed_jobs_log_is_one_ranks(cli, tmp_path):
    import sys
    from pathlib import Path

    from tests.conftest import read_records, run_dirs

    program = Path(__file__).resolve().parents[1] / "programs" / "ddp_ranks.py"
    out = tmp_path / "out"
    result = cli(
        "watch", "--quiet", "--duration", "3", "--no-torch-hook", "--out", out, "--", sys.executable, str(program), "3"
    )
    assert result.exit_code == 0, result.output
    (record,) = read_records(run_dirs(out)[0])
    assert record["metrics"]["program_world_size"] == 3
    assert any("torch.distributed job of 3 processes" in w for w in record["warnings"])
