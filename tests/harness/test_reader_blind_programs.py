"""The readers on what the six programs nobody here had run printed (docs/records/
2026-11-26-blind-programs.md, "What the fixers need to know", items 1-4 and 6): a fitness
is no counter, a program's time per generation is its clock, a tab-separated Logbook is a
table, a printed rate's key is no counter, and `harness watch` reads a program's counters as
a sweep cell does. The captures are in tests/corpus/ (evotorch-pgpe, neat-lorenz-ctrnn,
rl-games-ppo, gensim-word2vec); DEAP's lines are quoted (it ends in 2.7 s, all warm-up)."""

from __future__ import annotations

import math
import tomllib

import pytest

from harness.monitors.logprogress import LogProgress
from harness.monitors.logrates import DEFAULT_PATTERN, LogRatesMonitor, parse_line
from harness.program import capture
from harness.readers import line_readers
from harness.readers.columns import Columns
from harness.readers.series import Series
from harness.readers.words import is_statistic, kind_of, rank, unit_of
from tests.harness.test_corpus import CAPTURES, _output
from tests.harness.test_reader_checks import feed_at
from tests.harness.test_readers import found

SENTENCES, PAIRS = (next(r for r in line_readers() if r.name == name) for name in ("sentences", "pairs"))


# ------------------------------------------------------------------ 1. a fitness is no counter
def _evotorch_block(i: int, best: float) -> list[str]:
    """StdOutLogger's block after generation i: fitnesses (negative, up and down) beside the
    running totals of environment steps and episodes."""
    return [
        f"                   iter : {i}",
        f"              mean_eval : {-1400.0 - 13.7 * (i % 3):.10f}",
        f"          pop_best_eval : {-900.0 + 80.0 * ((-1) ** i):.10f}",
        f"            median_eval : {-1380.0 - 9.0 * (i % 2):.10f}",
        f"              best_eval : {best:.10f}",
        f"             worst_eval : {-1880.0 - 10.0 * i:.10f}",
        f"total_interaction_count : {20000 * i}",
        f"    total_episode_count : {100 * i}",
        f"       center_mean_eval : {-1250.0 + 20.0 * (i % 4):.10f}",
        "",
    ]


def test_evotorchs_fitnesses_are_values_and_its_environment_steps_the_headline():
    lines = [(12.0 * i, text) for i in range(1, 10) for text in _evotorch_block(i, -880.0 + 10.0 * i)]
    probe, feed = feed_at(lines)
    assert feed.counters == ["iterations", "total_interaction_count", "total_episode_count"]
    assert probe.declared[-1] == "total_interaction_count"  # interactions: environment steps, the finest unit
    assert probe.values["total_interaction_count_per_s"] == pytest.approx(20000 / 12.0)
    assert probe.values["pop_best_eval"] < 0 and "pop_best_eval_per_s" not in probe.values  # logged, not counted
    assert not [w for w in probe.warnings if "eval" in w]


def test_fitness_words_and_environment_interactions():
    assert kind_of("pop_best_eval") == kind_of("worst_eval") == kind_of("best_score") == "value"
    assert kind_of("total_interaction_count") == kind_of("gen") == "counter"
    assert unit_of("total_interaction_count") == "interactions" and unit_of("gen") == "generations"
    assert rank("total_interaction_count") < rank("iterations") < rank("total_episode_count")
    assert is_statistic("max") and is_statistic("pop_best_eval") and not is_statistic("processed")


def test_a_counter_that_reads_a_negative_number_is_a_value_from_then_on():
    """`eval: 5, 8, -2`: it grew like a counter until it read a count never is."""
    lines = [(float(i), f"step {100 * i} eval: {v}") for i, v in enumerate([5, 8, 11, 14, -2, 3, 9])]
    probe, feed = feed_at(lines)
    series = feed.series_of("evals")
    assert series.kind == "value" and "a count is never negative" in (series.not_a_count or "")
    assert math.isnan(probe.values["evals_per_s"])
    assert probe.declared[-1] == "steps" and probe.values["headline_check"] == "unchecked"
    assert "evals: not a count: it read -2" in probe.values["progress_set_aside"]
    assert "evals_per_s unknown (not a count)" in probe.values["progress_provenance"]
    assert probe.values["evals"] == 9  # its readings since are a logged value


def test_a_negative_first_reading_is_never_counted():
    probe, feed = feed_at([(float(i), f"eval: {-100 - 3 * i}") for i in range(6)])
    assert feed.counters == [] and probe.counts == {}
    assert any(w.startswith("no progress counter recognised") for w in probe.warnings)


def test_scores_that_fall_and_rise_and_are_not_whole_are_no_increments():
    """A positive fitness per report (CartPole's 500 at best): summed as increments it read
    as a rate of evaluations, finer than the generations beside it."""
    scores = [480.5, 230.25, 500.0, 310.75, 499.5, 120.5, 350.25, 420.5, 200.75, 488.0]
    series = Series("evals", "s", "pairs", "eval")
    for i, score in enumerate(scores):
        series.see(score, "measure", float(i))
    assert series.kind == "value" and not series.trusted
    assert "not whole numbers" in (series.not_a_count or "")
    counts = Series("evals", "s", "columns", "nevals")
    for i, n in enumerate([300, 181, 191, 199, 167, 175, 168, 180]):
        counts.see(n, "measure", float(i))
    assert counts.kind == "increments"  # DEAP's evaluations per generation: whole amounts


def test_a_negative_number_is_no_count_in_prose():
    assert SENTENCES.read("episode_eval : -969") == []  # not 969: pairs reads -969 whole
    assert [(r.name, r.value) for r in PAIRS.read("episode_eval : -969")] == [("episode_eval", -969.0)]
    assert [r.value for r in SENTENCES.read("step 400 eval: -2")] == [400.0]  # `400 eval:` is no count of evals


# ------------------------------------------------------------------ 2. a program's time per unit is its clock
def _neat(laps: list[float], said: float = 1.0) -> list[tuple[float, str]]:
    """neat-python's StdOutReporter: `Generation time` of generation N-1, then `Running
    generation N`, the program printing `said` times the seconds each generation took."""
    lines, t = [(0.0, " ****** Running generation 0 ****** ")], 0.0
    for n, lap in enumerate(laps, start=1):
        t += lap
        lines.append((t, f"Best fitness: -0.2{n} - size: (3, 12) - species 1 - id {100 + n}"))
        lines.append((t, f"Generation time: {lap * said:.3f} sec ({sum(laps[:n]) / n:.3f} average)"))
        lines.append((t, f" ****** Running generation {n} ****** "))
    return lines


def test_neats_generation_time_checks_the_generation_rate():
    probe, _ = feed_at(_neat([3.681, 1.136, 1.433, 3.922, 7.244, 4.063, 2.5]))
    assert probe.values["headline_check"] == "passed"
    assert "own numbers and clock (20 s)" in probe.values["headline_provenance"]
    assert "1.00x, agrees" in probe.values["headline_provenance"]


def test_a_clock_that_disagrees_is_said():
    probe, _ = feed_at(_neat([3.0] * 8, said=0.5))  # its laps half the time between its reports
    assert probe.values["headline_check"] == "warned"
    assert "0.50x, differs" in probe.values["headline_provenance"]  # its clock says twice as fast


def test_the_time_of_one_step_printed_every_100_steps_is_no_clock():
    lines = [(0.5 * i, f"step {100 * i} step_time: 0.005 s") for i in range(40)]
    probe, _ = feed_at(lines)
    assert "clock" not in probe.values["headline_provenance"]


def test_laps_read_in_seconds():
    laps = [r for r in SENTENCES.read("Generation time: 3.681 sec (3.205 average)") if r.kind == "lap"]
    assert [(r.name, r.value) for r in laps] == [("generations", 3.681)]
    ms = [r.value for r in SENTENCES.read("epoch_time=120 ms") if r.kind == "lap"]
    assert ms == [pytest.approx(0.12)]
    assert not [r for r in SENTENCES.read("wall time: 12 s") if r.kind == "lap"]  # no unit word


# ------------------------------------------------------------------ 3. DEAP's Logbook, a table of columns
DEAP = [
    "gen\tnevals\tavg    \tstd    \tmin\tmax",
    "0  \t300   \t50.4933\t5.33822\t34 \t64 ",
    "1  \t181   \t54.8333\t4.34958\t44 \t66 ",
    "2  \t191   \t58.4567\t3.45564\t47 \t68 ",
]


def test_deaps_logbook_is_read_column_by_column():
    reader = Columns()
    assert reader.read(DEAP[0]) == []
    row = {r.name: (r.kind, r.value) for r in reader.read(DEAP[2])}
    assert row == {
        "generations": ("counter", 1.0),
        "nevals": ("value", 181.0),
        "avg": ("value", 54.8333),
        "std": ("value", 4.34958),
        "min": ("value", 44.0),
        "max": ("value", 66.0),
    }
    assert reader.read("1\t2\t3") == []  # a row of another width


def test_a_table_of_columns_needs_its_header_and_leaves_prose_alone():
    reader = Columns()
    assert reader.read(DEAP[1]) == []  # no header yet
    for prose in ("Population of 150 members in 1 species (after reproduction):", "Mode:       base -- 3 inputs"):
        reader.read(prose)
    assert reader.header is None
    reader.read("   ID   age  size   fitness   adj fit  stag")  # neat-python's species table
    reader.read("  ====  ===  ====  =========  =======  ====")
    assert [r.name for r in reader.read("     1    3   150     -0.199    0.964     0")] == [
        "id", "age", "size", "fitness", "adj_fit", "stag",
    ]  # fmt: skip


def test_deaps_generations_are_its_progress():
    lines = [(0.0, DEAP[0])] + [
        (0.05 * g, f"{g}  \t{300 - g}   \t{50 + g}.5\t5.1\t{34 + g} \t{64 + g} ") for g in range(41)
    ]
    probe, feed = feed_at(lines)
    assert feed.counters == ["generations"]
    assert probe.values["generations_per_s"] == pytest.approx(20.0)
    assert feed.series_of("generations").reader == "columns"


def test_a_counter_with_too_few_readings_is_said_so_not_called_an_index():
    """DEAP ended in its warm-up: its `gen` is a counter that had no window, not an index."""
    from harness.cell.probe import Probe
    from harness.program.capture import ReplayClock
    from harness.readers import Feed

    clock = ReplayClock()
    probe = Probe(duration_s=20.0, warmup_s=5.0, clock=clock)
    feed = Feed(probe, line_readers(), clock=clock)
    for g, line in enumerate(DEAP):
        clock.t = 0.04 * g
        feed.line(line)
    feed.finish()
    said = [w for w in probe.warnings if w.startswith("no throughput")]
    assert len(said) == 1 and "changed under twice in the measured window" in said[0] and "index" not in said[0]


# ------------------------------------------------------------------ 4. rl_games' printed rates
RL_GAMES = "fps step: 742 fps step and policy inference: 623 fps total: 510 epoch: 2 frames: 256"


def test_a_printed_rates_key_is_no_counter():
    readings = {}
    for reader in line_readers():
        for r in reader.read(RL_GAMES):
            readings.setdefault(r.name, (r.kind, r.value))
    assert "steps" not in readings  # `fps step: 742` is a rate's key and its number
    assert "printed_fps" not in readings  # 742 and 623 are the keys' before them, not `742 fps`
    assert readings["printed_fps_step"] == ("rate", 742.0) and readings["printed_fps_total"] == ("rate", 510.0)
    assert readings["frames"] == ("counter", 256.0) and readings["epochs"] == ("counter", 2.0)
    assert found(SENTENCES, "@ 2140.3 fps")["printed_fps"] == ("rate", 2140.3)  # a rate after its number


# ------------------------------------------------------------------ 6. watch reads what the readers read
def test_a_rate_with_a_word_before_its_unit():
    line = "EPOCH 3: training on 59890 raw words (32543 effective words) took 0.1s, 231646 effective words/s"
    assert parse_line(line, [__import__("re").compile(DEFAULT_PATTERN)]) == [("log_effective_words_per_s", 231646.0)]
    assert found(SENTENCES, line)["printed_effective_words_per_s"] == ("rate", 231646.0)
    assert parse_line("at 12,345 steps/s", [__import__("re").compile(DEFAULT_PATTERN)]) == [
        ("log_steps_per_s", 12345.0)
    ]


def _watched(folder) -> LogRatesMonitor:
    """A capture handed to watch's log monitor as its pipe hands it over, on the capture's clock."""
    clock = capture.ReplayClock()
    monitor = LogRatesMonitor([], fed=True, clock=clock)
    _, chunks = capture.read(_output(folder))
    for t, _, text in chunks:
        clock.t = t
        monitor.take(text.encode())
    monitor.finish()
    return monitor


FAST = {
    "evotorch-pgpe",
    "neat-lorenz-ctrnn",
    "rl-games-ppo",
    "gensim-word2vec",
    "async-eval",
}  # the rest: whole logs, slow


@pytest.mark.parametrize(
    "folder",
    [pytest.param(p, marks=() if p.name in FAST else pytest.mark.slow) for p in CAPTURES],
    ids=[p.name for p in CAPTURES],
)
def test_watch_reads_each_captures_headline_as_a_sweep_does(folder):
    """Before, watch read only `<n> <unit>/s` lines: 14 of these 19 captures gave it no
    throughput. Now its headline is the counter the program's log is judged by (the
    meta's), unknown where the sweep's is, and it says no throughput only then."""
    meta = tomllib.loads((folder / "meta.toml").read_text())
    monitor = _watched(folder)
    metrics = monitor.result().metrics
    assert metrics.get("headline_rate") == f"{meta['headline']}_per_s", metrics.get("progress_provenance")
    rate = metrics[f"{meta['headline']}_per_s"]
    assert math.isnan(rate) == math.isnan(meta["rate"])
    assert (monitor.silence("x") is None) == (not math.isnan(meta["rate"]) or bool(monitor.rate_lines))
    assert "measure_s" not in metrics and "wall_s" not in metrics  # the watch's own window stays the watch's


def test_watch_reads_gensim_and_neat_as_their_logs_do():
    gensim = _watched(next(p for p in CAPTURES if p.name == "gensim-word2vec")).result().metrics
    assert gensim["epochs_per_s"] == pytest.approx(8.4, rel=0.10)  # the log: 100 epochs in 11.9 s, 8.41
    assert gensim["log_effective_words_per_s"] > 0 and "printed_effective_words_per_s" not in gensim  # said once
    neat = _watched(next(p for p in CAPTURES if p.name == "neat-lorenz-ctrnn")).result().metrics
    assert neat["headline_check"] == "passed" and "agrees" in neat["headline_provenance"]


def test_the_readers_warnings_reach_the_watch_but_not_their_no_throughput():
    t = [0.0]
    progress = LogProgress(clock=lambda: t[0])
    for i in range(60):  # two workers' evaluation episodes, each its own index
        t[0] = 0.5 * i
        progress.line(f"(Worker pid={11 + i % 2}) episode {i // 2 % 10}")
        progress.tick()
    progress.finish()
    assert any("is not a counter to sum" in w for w in progress.warnings)
    assert not any(w.startswith(("no throughput", "no progress counter")) for w in progress.warnings)
    assert progress.rate() is None


def test_a_short_watch_keeps_the_printed_rate_where_the_counter_gave_none():
    """busy_poll's 4 s watch ended in its `step` counter's warm-up: the printed `steps/s`
    stays the watch's throughput (no NaN headline over it), and what was read is said."""
    clock = capture.ReplayClock()
    monitor = LogRatesMonitor([], fed=True, clock=clock)
    for i in range(1, 7):
        clock.t = 0.6 * i
        monitor.take(f"step {10 * i} ({12.5 + i} steps/s)\n".encode())
    monitor.finish()
    metrics = monitor.result().metrics
    assert metrics["log_steps_per_s"] == pytest.approx(16.0)
    assert "headline_rate" not in metrics and "steps_per_s" not in metrics
    assert "too few readings" in metrics["progress_provenance"] and monitor.silence("x") is None
