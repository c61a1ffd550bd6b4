"""Each progress reader on the lines real programs print: the counter, the rate and the
values it recognises, and what it must leave alone."""

from __future__ import annotations

import csv
import json
import os
import time

import pytest

from harness.readers import Feed, file_readers, line_readers, patterns
from harness.readers.csvfile import CsvFile
from harness.readers.pairs import Pairs
from harness.readers.pattern import Pattern
from harness.readers.progress_bar import ProgressBar
from harness.readers.protocol import Reading
from harness.readers.sentences import Sentences
from harness.readers.table import Table
from harness.readers.words import kind_of, rank


def found(reader, line: str) -> dict[str, tuple[str, float]]:
    return {r.name: (r.kind, r.value) for r in reader.read(line)}


def test_words_tell_counters_rates_and_values():
    assert kind_of("global_step") == kind_of("total_timesteps") == kind_of("Iteration") == "counter"
    assert kind_of("time/fps") == kind_of("SPS") == kind_of("steps_per_second") == "rate"
    assert kind_of("rollout/ep_rew_mean") == kind_of("ep_len_mean") == kind_of("time_elapsed") == "value"
    assert rank("frames") < rank("global_step") < rank("iterations") < rank("episodes") < rank("loss")


def test_table_rows_of_a_stable_baselines_logger():
    table = Table()
    assert found(table, "|    total_timesteps | 2048     |") == {"total_timesteps": ("counter", 2048)}
    assert found(table, "|    fps             | 5550     |") == {"printed_fps": ("rate", 5550)}
    assert found(table, "|    ep_rew_mean     | 22.3     |") == {"ep_rew_mean": ("value", 22.3)}
    assert found(table, "| time/              |          |") == {}
    assert found(table, "---------------------------------") == {}


def test_tqdm_and_rich_bars():
    bar = ProgressBar()
    assert found(bar, " 45%|████▌     | 4500/10000 [00:12<00:15, 350.12it/s]") == {
        "iterations": ("counter", 4500), "printed_it_per_s": ("rate", 350.12), "elapsed_s": ("clock", 12)}  # fmt: skip
    assert found(bar, "epoch 3:  50%|█| 512/1024 [00:03<00:03, 160.52steps/s, loss=0.3]")["steps"] == ("counter", 512)
    slow = found(bar, " 3/100 [00:05<02:30, 2.00s/it]")
    assert slow["printed_it_per_s"] == ("rate", 0.5)
    assert found(bar, "12.3k/20k [00:10<00:06, 1.2kit/s]")["iterations"] == ("counter", 12300)
    assert found(bar, "━━━━━━━ 1,234/10,000  [ 0:00:10 < 0:01:10 , 98 it/s ]")["iterations"] == ("counter", 1234)
    assert found(bar, "epoch 0:   0%|          | 0/200 [00:00<?, ?it/s]") == {
        "iterations": ("counter", 0), "elapsed_s": ("clock", 0)}  # fmt: skip


def test_sentences_counters_beside_rates():
    s = Sentences()
    assert found(s, "Iteration 4500 (33.4 iter/s)") == {
        "iterations": ("counter", 4500), "printed_iter_per_s": ("rate", 33.4)}  # fmt: skip
    assert found(s, "After 51200 frames: @ 2140.3 fps") == {
        "frames": ("counter", 51200), "printed_fps": ("rate", 2140.3)}  # fmt: skip
    per_min = found(s, "12 games, 68.3 games/min")
    assert per_min["games"] == ("counter", 12) and per_min["printed_games_per_s"][1] == pytest.approx(68.3 / 60)
    assert found(s, "4 workers started, lr 3e-4, 33.4% done") == {}
    assert found(s, "12/100 done") == {}
    assert found(s, "Fps is (10 sec: 409.7). Total num frames: 2048. Samples: 2571.")["frames"] == ("counter", 2048)


def test_pairs_leave_clock_times_and_window_labels_alone():
    p = Pairs()
    assert found(p, "global_step=1000, episodic_return=20.0") == {
        "global_step": ("counter", 1000), "episodic_return": ("value", 20.0)}  # fmt: skip
    assert found(p, "SPS: 1234") == {"printed_sps": ("rate", 1234)}
    assert found(p, "ETA: 0:01:30 elapsed 00:12") == {}
    assert "sec" not in found(p, "Fps is (10 sec: 2100.5, 60 sec: 2000.1). Total num frames: 40960.")


def test_user_pattern_declares_a_counter_and_rejects_bad_regexes():
    declared = Pattern(r"frames=After (\d+) frames")
    assert declared.counter == "frames"
    assert found(declared, "After 512 frames") == {"frames": ("counter", 512)}
    named = Pattern(r"Fps is \(10 sec: (?P<fps>[\d.]+).*Total num frames: (?P<frames>\d+)")
    assert found(named, "Fps is (10 sec: 2100.5, 60 sec: 2000.1). Total num frames: 40960.") == {
        "printed_fps": ("rate", 2100.5), "frames": ("counter", 40960)}  # fmt: skip
    with pytest.raises(ValueError, match="named group"):
        Pattern(r"After \d+ frames")
    with pytest.raises(ValueError, match="not a valid regular expression"):
        patterns("(?P<x>[")


class FakeProbe:
    """What the feed calls, recorded."""

    current_phase = "measure"
    target = None

    def phase(self, name):
        self.phases.append(name)

    def __init__(self):
        self.counts: dict[str, float] = {}
        self.values: dict[str, float] = {}
        self.warnings: list[str] = []
        self.declared: list[str] = []
        self.phases: list[str] = []

    def count(self, name, n):
        self.counts[name] = self.counts.get(name, 0) + n

    def set(self, name, value):
        self.values[name] = value

    def quality(self, name, value):
        self.values[name] = value

    def warn(self, message):
        self.warnings.append(message)

    def declare_rate(self, counter):
        self.declared.append(counter)


def test_feed_counts_deltas_restarts_and_takes_a_line_once():
    probe, t = FakeProbe(), [0.0]
    feed = Feed(probe, line_readers(), clock=lambda: t[0])
    feed.line("Info: (n_steps=32 and n_envs=2)")  # a config value, said once: no counter
    for n in (100, 200, 300, 0, 150):  # a bar that restarts: 300, to zero, then a new run of 150
        feed.line(f"{n}/1000 [00:01<00:09, 100.00it/s]")
        t[0] += 1
    assert probe.counts["iterations"] == 350  # counted from the first value on
    assert probe.phases == ["warmup"]  # the first growth restarts the warm-up, once
    for frames in (12345, 12400):  # two readers see each: one counter; colours dropped
        feed.line(f"\x1b[37m\x1b[1mTotal num frames: {frames}\x1b[0m")
    assert probe.counts == {"iterations": 350, "frames": 55}
    assert probe.declared == ["iterations", "frames"]  # frames are finer: the headline


def test_feed_reports_a_running_average_that_disagrees_with_the_counter():
    probe, t = FakeProbe(), [0.0]
    feed = Feed(probe, line_readers(), clock=lambda: t[0])
    steps = 0
    for second in range(1, 21):
        steps += 100 if second <= 10 else 50  # the real rate halves
        t[0] = float(second)
        feed.line(f"|    total_timesteps | {steps} |")
        feed.line(f"|    fps             | {steps / second:.0f} |")  # since the start
    feed.finish()
    assert probe.values["printed_fps"] > 70  # the median of a slowly sinking average
    assert probe.values["printed_fps_vs_counted"] == pytest.approx(probe.values["printed_fps"] / (1300 / 18), rel=0.01)
    assert probe.counts["total_timesteps"] == 1500 - 100
    assert any("average since the start" in w for w in probe.warnings)
    assert "table: counter total_timesteps x20, rate printed_fps x20" in probe.values["progress_recognised"]


def test_a_counter_is_read_from_one_source():
    """CleanRL prints global_step and writes it as its events' step, at other moments."""
    probe, feed = FakeProbe(), None
    feed = Feed(probe, line_readers())
    feed.apply([Reading("global_step", 26, "counter")], source="output")
    feed.apply([Reading("global_step", 256, "counter")], source="tensorboard")
    feed.apply([Reading("global_step", 46, "counter")], source="output")
    feed.apply([Reading("global_step", 512, "counter")], source="tensorboard")
    assert probe.counts == {"global_step": 20}


def test_feed_says_why_there_is_no_rate():
    probe = FakeProbe()
    feed = Feed(probe, line_readers())
    feed.line("starting up")
    feed.finish()
    assert any("no progress counter recognised in 1 lines" in w and "--progress" in w for w in probe.warnings)


def test_csv_file_followed_as_it_grows(tmp_path):
    path = tmp_path / "progress.csv"
    reader = CsvFile("progress.csv", tmp_path)
    assert reader.poll() == [] and "no file yet" in reader.describe()
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["time/total_timesteps", "time/fps", "rollout/ep_rew_mean"])
        out.writerow([2048, 5550, ""])
        fh.write("4096,55")  # a row still being written
    first = {(r.name, r.kind, r.value) for r in reader.poll()}
    assert first == {("total_timesteps", "counter", 2048), ("printed_fps", "rate", 5550)}
    with open(path, "a") as fh:
        fh.write("60,22.5\n")
    assert {(r.name, r.value) for r in reader.poll()} == {
        ("total_timesteps", 4096),
        ("printed_fps", 5560),
        ("ep_rew_mean", 22.5),
    }
    assert reader.describe().endswith("1 file(s), 2 rows")


def test_tensorboard_event_files_read_with_tensorboards_loader(tmp_path):
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    old = SummaryWriter(str(tmp_path / "runs" / "an_earlier_run"))
    old.add_scalar("charts/SPS", 5.0, 99999)
    old.close()
    for f in (tmp_path / "runs" / "an_earlier_run").iterdir():
        os.utime(f, (time.time() - 3600, time.time() - 3600))  # written an hour ago: not this run's
    (reader,) = file_readers("runs", tmp_path)
    assert reader.poll() == []
    writer = SummaryWriter(str(tmp_path / "runs" / "exp1"))
    writer.add_text("hyperparameters", "|param|value|")  # CleanRL's: a tensor of strings, not a scalar
    for step in (100, 200):
        writer.add_scalar("charts/SPS", 1000.0, step)
        writer.add_scalar("charts/episodic_return", 20.0 + step, step)
    writer.flush()
    readings = {(r.name, r.kind, r.value) for r in reader.poll()}
    assert ("global_step", "counter", 200) in readings and ("printed_sps", "rate", 1000.0) in readings
    assert ("episodic_return", "value", 220.0) in readings
    writer.add_scalar("charts/SPS", 900.0, 300)
    writer.close()
    assert {(r.name, r.value) for r in reader.poll()} == {("printed_sps", 900.0), ("global_step", 300)}
    assert "1 event file(s)" in reader.describe()


def test_json_objects_flattened_and_our_own_messages_left_to_the_suite():
    (json_reader,) = [r for r in line_readers() if r.name == "json"]
    assert found(json_reader, json.dumps({"global_step": 5, "perf": {"fps": 10.5}, "done": True})) == {
        "global_step": ("counter", 5), "printed_fps": ("rate", 10.5)}  # fmt: skip
    assert found(json_reader, json.dumps({"count": {"steps": 3}})) == {}


def test_a_declared_counter_stays_the_headline():
    """`--progress 'episodes=Ep (\\d+)'`: the user's counter is judged by, even beside a finer one."""
    from harness.program.launch import _declared_counter

    readers = line_readers(r"episodes=Ep (\d+)")
    probe = FakeProbe()
    feed = Feed(probe, readers, headline=_declared_counter(readers))
    for n in range(1, 4):
        feed.line(f"Ep {n} step {100 * n}")
    assert probe.counts == {"episodes": 2, "steps": 200}
    assert probe.declared == ["episodes"]
