"""Counters only from evidence that holds over the window (issue 43): a number that restarts
within a unit of work, several workers' numbers under one name, or readings in bursts
unrelated to the clock are no running total and no increments; their sum is no rate unless
a second source agrees. And where no counter was read, the values that grew are offered as
`--progress` flags to paste.

Each case is the shape of a program's output (tests/corpus/ holds the captures:
ray-selfplay-bursts, ray-selfplay, async-eval)."""

from __future__ import annotations

import math
import random
import re
import shlex

import pytest

from harness.monitors.logrates import LogRatesMonitor
from harness.program.capture import read as read_capture
from harness.program.launch import _declared_counter
from harness.readers import Feed, line_readers
from harness.readers.growing import Growing
from harness.readers.protocol import Reading
from harness.readers.series import Series
from tests.harness.test_corpus import CORPUS
from tests.harness.test_reader_checks import feed_at
from tests.harness.test_readers import FakeProbe


def _workers_totals(workers: int, lines_each: int, seed: int = 1) -> list[tuple[float, str]]:
    """Each worker of a self-play trainer counting its own simulated games, `step N`, the
    workers' lines interleaved as processes sharing one stdout print them: several running
    totals under one name, a few hundred apart."""
    rng = random.Random(seed)
    totals = [rng.randint(100, 900) for _ in range(workers)]
    lines = []
    for i in range(lines_each * workers):
        w = rng.randrange(workers)
        totals[w] += 1
        lines.append((0.02 * i, f"step {totals[w]}"))
    return lines


def test_several_workers_counting_up_are_not_summed_as_increments():
    """Four workers' totals interleaved drop and rise like increments; summed, the old feed
    read the sum of the totals, hundreds of times the truth, unchecked and unwarned."""
    probe, feed = feed_at(_workers_totals(workers=4, lines_each=500))
    series = feed.series_of("steps")
    assert series.kind == "increments" and series.index is not None  # the shape, and the evidence against it
    assert "one more than a recent one" in series.index
    assert math.isnan(probe.values["steps_per_s"])
    assert probe.values["headline_check"] == "unchecked"
    assert "unknown" in probe.values["headline_provenance"]
    assert any(w.startswith("steps (`step`) is not a counter to sum") for w in probe.warnings)
    assert any(w.startswith("no throughput can be computed") for w in probe.warnings)
    # what reached the probe while the program ran stopped once the evidence was in
    assert probe.counts["steps"] < 10 * 900


def test_amounts_in_bursts_are_not_summed():
    """The issue's engine: `step N` for every simulated game (N: the plies it took), hundreds
    in a burst at every move, a move every 9-18 s. They move like increments; summed, they
    were the headline at 77x the program's progress. Hundreds in an instant are no report per
    interval of the program's clock."""
    rng = random.Random(2)
    lines = []
    for move in range(6):
        lines += [
            (move * rng.uniform(9, 18) + i * 0.0001, f"step {rng.randint(5, 9)}") for i in range(rng.randint(200, 400))
        ]
    probe, feed = feed_at(sorted(lines))
    series = feed.series_of("steps")
    assert series.kind == "increments" and "bursts" in series.index
    assert math.isnan(probe.values["steps_per_s"]) and probe.values["headline_check"] == "unchecked"


def test_true_increments_stay_summed():
    """DI-engine's `envstep_count: 99` per collection, a report every second or two, values
    close together (a successor now and then by chance) is summed as before."""
    rng = random.Random(3)
    values = [rng.randint(95, 104) for _ in range(40)]
    probe, feed = feed_at([(1.5 * i, f"envstep_count: {v}") for i, v in enumerate(values)])
    series = feed.series_of("envstep_count")
    assert series.kind == "increments" and series.index is None
    assert probe.counts["envstep_count"] == sum(values)
    assert probe.values["envstep_count_per_s"] > 0


def test_an_index_that_restarts_every_evaluation_is_no_rate():
    """The asynchronous trainer's evaluation: `episode 0..9` every 15 s. Its cycles counted
    would be the evaluations' episodes, given as the program's throughput."""
    lines = []
    for evaluation in range(4):
        lines += [(evaluation * 15.0 + 0.05 * k, f"[eval] episode {k} return=12.0") for k in range(10)]
        lines += [(evaluation * 15.0 + 2.0 * j, f"[learner] loss={0.3 - 0.01 * j:.2f}") for j in range(1, 7)]
    probe, feed = feed_at(sorted(lines))
    assert "restarted from near zero 3 times" in feed.series_of("episodes").index
    assert math.isnan(probe.values["episodes_per_s"]) and probe.values["headline_check"] == "unchecked"


def test_a_restarting_index_that_a_second_source_agrees_with_is_a_rate():
    """A count of items per epoch, `batch 0..99`, beside the program's own `batches/s`: the
    sum of its cycles agrees with what the program says, so it is a rate (checked)."""
    lines = []
    for i in range(300):
        t = i * 0.1
        lines.append((t, f"epoch {i // 100} batch {i % 100 + 1} (10.0 batches/s)"))
    probe, feed = feed_at(lines)
    assert feed.series_of("batches").index is not None
    assert probe.values["batches_per_s"] == pytest.approx(10.0, rel=0.05)
    assert "batches" not in feed.doubted and probe.values["headline_check"] == "passed"


def test_a_bar_per_epoch_restarts_by_design():
    """tqdm's `n/total` starts again with every epoch's bar (Lightning): no index."""
    series = Series("iterations", "bar", "progress_bar", "it")
    for epoch in range(5):
        for n in range(0, 33, 4):
            series.see(n, "measure", epoch * 1.0 + n / 40)
    assert series.restarts == 4 and series.index is None and series.trusted


def test_several_processes_numbers_under_one_name_are_no_total():
    """Ray prefixes each worker's line with its pid: two workers' `move M` are two series under
    one name; and its deduplication prints one line for several workers' alike lines."""
    lines = []
    for m in range(1, 6):
        lines.append((m * 11.0, f"\x1b[36m(SelfPlayWorker pid=101)\x1b[0m game 1 move {m} (11.0 s)"))
        lines.append((m * 11.0 + 3, f"\x1b[36m(SelfPlayWorker pid=102)\x1b[0m game 1 move {m} (11.0 s)"))
    probe, feed = feed_at(lines)
    assert "2 processes" in feed.series_of("moves").index
    assert math.isnan(probe.values["moves_per_s"])
    merged = [(float(i), f"(SelfPlayWorker pid=101) step {200 + i} [repeated 300x across cluster]") for i in range(5)]
    _, feed = feed_at(merged)
    assert "[repeated Nx across cluster]" in feed.series_of("steps").index


def test_a_trusted_counter_is_the_headline_beside_an_index():
    lines = []
    for i in range(30):
        lines.append((float(i), f"[eval] episode {i % 5} return=1.0"))
        lines.append((float(i) + 0.5, f"frames={1000 * i}"))
    probe, _ = feed_at(lines)
    assert probe.declared[-1] == "frames" and probe.values["headline_check"] == "unchecked"
    assert probe.values["frames_per_s"] == pytest.approx(1000, rel=0.01)
    assert not any(w.startswith("no throughput") for w in probe.warnings)


@pytest.mark.parametrize(
    ("line", "reader"),
    [
        ("[learner] processed={n} loss=0.25 elapsed={s}", "pairs"),
        ('{{"stats": {{"handled": {n}}}, "elapsed": {s}}}', "json"),
        ("|    seen_rows     | {n}     |", "table"),
    ],
)
def test_values_that_grew_are_offered_as_progress_flags_that_read_them(line, reader):
    """No counter word: the warning names the value that grew with the exact `--progress` to
    paste, for the shape its reader found it in; pasted, that flag counts it."""
    lines = [(2.0 * i, line.format(n=1000 * i, s=2.0 * i)) for i in range(1, 20)]
    probe, _ = feed_at(lines)
    (warning,) = [w for w in probe.warnings if w.startswith("no progress counter recognised")]
    offered = warning.split(". Or say")[0]
    (flag,) = re.findall(r"--progress '[^']*'", offered)
    assert "elapsed" not in offered  # the program's clock is no choice
    (pattern,) = shlex.split(flag)[1:]
    readers = line_readers(pattern)
    probe, t = FakeProbe(), [0.0]
    feed = Feed(probe, readers, clock=lambda: t[0], headline=_declared_counter(readers))
    for when, text in lines:
        t[0] = when
        feed.line(text)
    feed.finish()
    (name,) = probe.counts
    assert probe.values[f"{name}_per_s"] == pytest.approx(500, rel=0.01)
    assert probe.values["headline_check"] in ("passed", "unchecked")


def test_growing_keeps_values_that_only_grew():
    growing = Growing()
    for i in range(10):
        growing.see(Reading("processed", 64.0 * i, "value", "processed"), "pairs")
        growing.see(Reading("loss", 1.0 / (i + 1), "value", "loss"), "pairs")
        growing.see(Reading("elapsed", 2.0 * i, "value", "elapsed"), "pairs")
        growing.see(Reading("seed", 7.0, "value", "seed"), "pairs")
    assert [g.key for g in growing.candidates()] == ["processed"]
    assert growing.advice().endswith(r"--progress 'processed=\bprocessed\s*[=:]\s*(\d+)'")


def _watched(capture: str) -> LogRatesMonitor:
    """A capture's output handed to watch's log monitor as its pipe would hand it."""
    monitor = LogRatesMonitor([], fed=True)
    _, chunks = read_capture(CORPUS / capture / "output.jsonl")
    for _, _, text in chunks:
        monitor.take(text.encode())
    monitor.finish()
    return monitor


def test_watch_on_a_program_that_prints_no_rate_says_so_and_what_to_pass():
    """`harness watch` reads only printed rates; the asynchronous trainer prints none. It ends
    saying so, with the sweep (and its --progress) that would count what grew."""
    note = _watched("async-eval").silence("python train.py")
    assert note is not None and note.startswith("no throughput: none of its")
    assert "`processed` grew (" in note
    assert r"harness sweep --duration 60 --progress 'processed=\bprocessed\s*[=:]\s*(\d+)' -- python train.py" in note
    assert "elapsed" not in note and "--rate-regex" in note
    counted = _watched("ray-selfplay").silence("python selfplay.py")
    assert counted is not None and "--progress" not in counted  # Ray's pids grow and fall: no choice


def test_watch_with_a_rate_says_nothing_of_the_kind():
    monitor = LogRatesMonitor([], fed=True)
    monitor.take(b"Iteration 10 (33.4 iter/s)\nIteration 20 (33.1 iter/s)\n")
    monitor.finish()
    assert monitor.silence("x") is None
    assert LogRatesMonitor([]).silence("x") is None  # nothing followed: nothing to say


def test_the_report_says_there_is_no_rate_and_what_to_paste(tmp_path):
    """The async trainer's cell read as a sweep reads it: no finite rate, and the line under
    the table (terminal, report.html) gives the --progress to paste."""
    import io

    from rich.console import Console

    from harness.program.capture import replay_cell
    from harness.report.html import render_run
    from harness.report.terminal import render
    from harness.runs.view import build_view
    from tests.records import make_record

    metrics, warnings = replay_cell(CORPUS / "async-eval" / "output.jsonl", 40)
    record = make_record("c1", metrics, {"argv": "python async_eval.py", "workers": 1}, suite="command")
    view = build_view([record])
    out = io.StringIO()
    render(view, Console(file=out, width=600))
    flag = r"--progress 'processed=\bprocessed\s*[=:]\s*(\d+)'"
    assert "headline none: no throughput could be read from the program's output" in out.getvalue()
    assert flag in out.getvalue() and any(flag in w for w in warnings)
    assert flag.replace("'", "&#x27;") in render_run(tmp_path, view)
