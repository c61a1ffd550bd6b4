"""What a suite's numbers mean, declared by the suite, read by every part of the harness.

The harness knows no game. A suite tells it, through the `Vocabulary` on its `Suite`:
which rates judge it (and the finer counter a slow unit is made of), which param counts
its parallel workers and which its backend and device, which metrics measure quality and
which way they are better, how a quality metric may be gated, which metrics matter in a
report, which cell calibrates a machine, which of its metrics carry the generic signals
the diagnosis rules read, the remedies that name its own knobs, and optional limit
benchmarks. A suite that declares nothing still works: `resolve()` fills in conventions
(a `workers`, `backend` or `device` param where the suite has one; its first reported
`*_per_s` metric as its rate).

The harness's own generic names (what probes and monitors produce, what rules read) are
listed here and nowhere else: `HARNESS_METRICS`, `SIGNALS`, `CONVENTIONAL_PARAMS`.
`direction()` is the one table of which way a metric is better.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Better = Literal["higher", "lower"]

# Params a suite need not declare: when its Params model has one of these, the harness
# reads it as the worker count, the backend or the device (docs/architecture.md's conventions; the
# CLI's --workers and --backend flags set them).
CONVENTIONAL_PARAMS = ("workers", "backend", "device")

# Metrics the harness itself produces (probe, runner, monitors) or that it documents as
# the generic names every suite may report, with the way they are better (None: neither).
HARNESS_METRICS: dict[str, Better | None] = {
    "wall_s": "lower",
    "measure_s": None,
    "warmup_s": None,
    "time_to_target_s": "lower",  # wall time to reach a quality target (--target), checks excluded
    "time_to_target_low_s": None,  # the check before: the target was crossed between the two
    "work_to_target": "lower",  # the headline counter's units spent reaching it
    "quality_eval_s": None,
    "work_requested": None,
    "work_done": None,
    "cpu_s": None,
    "cpu_util_mean": None,
    "cpu_util_p95": None,
    "mem_pss_peak_mb": "lower",
    "mem_pss_proc_peak_mb": "lower",
    "mem_uss_peak_mb": "lower",
    "rss_proc_peak_mb": "lower",
    "gpu_util_mean": None,
    "gpu_util_p95": None,
    "gpu_mem_peak_mb": "lower",
    "efficiency_pct": "higher",
}

# The metric a record names its headline rate in when its suite learns the headline only at
# run time (harness.probe.Probe.declare_rate: a user's program read from its output).
HEADLINE_METRIC = "headline_rate"
HARNESS_METRICS[HEADLINE_METRIC] = None

# What every report shows after a suite's own rates and report metrics, when present.
HARNESS_REPORT = ("efficiency_pct", "work_done", "work_requested", "cpu_util_mean", "mem_pss_peak_mb", "gpu_util_mean")

# Generic signals the diagnosis rules read. A suite reports them under these names, or
# maps its own metric names onto them with `Vocabulary.signals`.
SIGNALS: dict[str, str] = {
    "batch": "observed: the size of each inference batch (probe.observe) -> batch_mean, batch_p95",
    "batch_limit": "value: the most items one batch may hold (a server's max batch)",
    "worker_devices": "value: the devices the workers' nets ran on (a list, or {pid: device})",
    "wait_s": "value: seconds the suite's waiting processes spent waiting",
    "wait_cpu_s": "value: CPU seconds they burned while waiting (<role>_wait_cpu_s per role)",
    "wait_share": "value: share of the time the suite's processes wait",
    "publish_share": "value: share of the time spent publishing weights or state",
    "server_idle_share": "value: share of the measured time a batching server computed no batch",
    "client_wait_share": "value: share of its clients' measured time spent blocked waiting for replies",
    "server_batches_computing": "value: batches the server computed at once, on average over the measured time",
    "server_batch_slots": "value: batches the server can compute at once (its compute threads or streams)",
    "reuse_ratio": "value: items consumed per item produced (a learner's samples per env step)",
    "consumer_cpu_s": "value: CPU seconds of the consuming processes (learners)",
    "producer_cpu_s": "value: CPU seconds of the producing process (the actor)",
    "sleep_share": "value: share of a thread's sampled time spent in sleep() (the thread whose sleeps wake it most)",
    "wakeups_hz": "value: that thread's voluntary context switches per second (wake-ups)",
    "ipc_share": "value: share of busy thread time spent (un)pickling and sending, over the last third of the run (the role where it is largest)",
    "ipc_share_growth": "value: ipc_share over the last third divided by that over the first third",
    "write_size_growth": "value: bytes per write call over the last third / the first third (the process that writes the most)",
    "gil_wait_share": "value: share of busy thread time spent waiting for the GIL (the process where it is largest)",
    "gil_threads": "value: threads of that process that wanted a CPU, on average",
    "gil_cpu_cores": "value: that process's CPU use, in cores",
    "gil_compute_spread": "value: that process's compute over its busiest thread's: the cores it could fill without the GIL",
    "worker_cpu_pct": "value: {pid: % of one core} of each worker process",
    "worker_wait_pct": "value: {pid: % of its sampled thread time} each worker spent blocked or asleep",
    "worker_runnable_pct": "value: {pid: % of one core} each worker ran or sat runnable waiting for a CPU (the "
    "kernel's schedstat: what it wanted, where worker_cpu_pct is what it got)",
    "worker_wakeups_hz": "value: {pid: wake-ups a second} of each worker process (voluntary context switches)",
    "worker_blocked_pct": "value: {pid: % of the sampled instants} each worker waited on another process of the "
    "program, read from /proc (the other end of its pipe, socket or shared semaphore: harness.watch.waits)",
    "main_cpu_pct": "value: % of one core used by the program's processes that are not workers",
    "waited_on": "value: {pid, role, cpu_pct} of the busiest of those processes (what idle workers may wait on)",
    "waits_on": "value: {role, pids, blocked, via, text} what the workers block on, read from /proc (the other "
    "end of their pipe, socket or shared semaphore: harness.watch.waits)",
    "worker_dormant": "value: [pid] of the workers that woke less than once a second and neither ran nor waited to",
    "gpu_asked": "value: 1 when the program asked for a GPU (its command line names cuda), else 0",
}

# Generic name rules for metrics nobody declared (names carry their unit: docs/architecture.md).
_LOWER_TOKENS = {"ms", "us", "ns", "rss", "mem", "latency", "lag"}
_BATCH_STATS = {"mean", "p50", "p95", "max"}


@dataclass(frozen=True)
class Rate:
    """A throughput that judges the suite: a probe counter's rate over the measured window.

    `per` is the unit the headline shows (`games_per_min` reads better than 0.2 games/s).
    `made_of` names a finer counter each unit consists of (a game of moves, an episode of
    env steps): a unit that takes seconds can then be counted fairly in a short window, as
    the finer rate over the mean unit length (harness.cell.window), when the suite also counts
    `completed_fine` (the finer units of each unit as it completes).
    """

    counter: str
    per: Literal["s", "min"] = "s"
    made_of: str | None = None

    @property
    def metric(self) -> str:
        return f"{self.counter}_per_{self.per}"

    @property
    def per_s(self) -> str:
        return f"{self.counter}_per_s"

    @property
    def completed_fine(self) -> str | None:
        """The counter of `made_of` units inside completed units ("moves_in_games"), which
        the suite counts when a unit completes: their ratio is the mean unit length."""
        return f"{self.made_of}_in_{self.counter}" if self.made_of else None


@dataclass(frozen=True)
class Quality:
    """A metric of how good the result is, not how fast it came.

    `bound_at_fixed_work`: a baseline may store a bound on it (worst repeat x slack) that
    the gate holds cells run at a fixed amount of work to; at a duration it depends on speed.
    """

    metric: str
    better: Better
    bound_at_fixed_work: bool = False


@dataclass(frozen=True)
class Reference:
    """The suite's calibration cell: its `metric` measures the machine, so other cells of
    the same run can be normalised by it. A cell qualifies when its params equal `params`;
    among those, the one with the fewest differences from `prefer` wins."""

    params: Mapping[str, Any]
    metric: str
    prefer: Mapping[str, Any] = field(default_factory=dict)

    def matches(self, params: Mapping[str, Any]) -> bool:
        return all(params.get(k) == v for k, v in self.params.items())

    def distance(self, params: Mapping[str, Any]) -> int:
        return sum(params.get(k) != v for k, v in self.prefer.items())


class _KnownValues(dict):
    def __missing__(self, key: str) -> str:
        return f"the current {key}"


@dataclass(frozen=True)
class Advice:
    """One way out of a diagnosed symptom, in the suite's knobs: `text` may name the cell's
    current values as `{knob}`, and `sets` are the knob values it asks for, so that a cell
    which already has them is not told to set them (a server cell already on the gather rule
    a remedy named was told to switch to it)."""

    text: str
    sets: Mapping[str, Any] = field(default_factory=dict)

    def already(self, params: Mapping[str, Any]) -> bool:
        return bool(self.sets) and all(params.get(k) == v for k, v in self.sets.items())

    def render(self, params: Mapping[str, Any]) -> str:
        """The text with the cell's values; a knob the cell's record lacks (a run older
        than the knob) reads as "the current <knob>"."""
        return self.text.format_map(_KnownValues(params))


@dataclass(frozen=True)
class Move:
    """A knob move that relieves a limit, for `harness tune`: `toward` is "up" or "down"
    along the knob's range, or the value to set (a categorical knob). `adds_work` marks a
    move that makes the cell use more of the machine (more workers, more threads, more
    batches in flight): tune stops making such moves once the cores are saturated."""

    knob: str
    toward: Any = "up"
    adds_work: bool = False

    @property
    def ordered(self) -> bool:
        return self.toward in ("up", "down")


@dataclass(frozen=True)
class LimitBenchmark:
    """A micro benchmark of one piece of the suite, timed by pyperf at several sizes: the
    fastest that piece can go, which reports compare a cell's achieved rate with.

    `time` is "module:function" with the signature `(loops, size, options_dict) -> seconds`,
    imported in pyperf's worker processes; `options` validates its knobs. A cell is compared
    with a curve when `applies(cell_params, options)`: its `achieved` metric over the curve's
    rate at the cell's `at` metric (e.g. nn_evals_per_s over evals/s at batch_mean).
    """

    name: str
    description: str
    options: type
    time: str
    sizes: tuple[int, ...]
    unit: str
    achieved: str
    at: str
    applies: Callable[[Mapping[str, Any], Mapping[str, Any]], bool]


@dataclass(frozen=True)
class Vocabulary:
    """Everything optional; `resolve()` gives the effective vocabulary for a Params model."""

    rates: tuple[Rate, ...] = ()
    workers: str | None = None  # param counting parallel workers (default: "workers" if present)
    backend: str | None = None  # param naming where the work runs (default: "backend" if present)
    device: str | None = None  # param naming the compute device (default: "device" if present)
    extra_processes: Callable[[Any], int] | None = None  # processes besides the workers (a server)
    quality: tuple[Quality, ...] = ()
    metrics: Mapping[str, Better] = field(default_factory=dict)  # directions of other metrics
    report: tuple[str, ...] = ()  # metrics worth a column in reports, after the rates
    reference: Reference | None = None
    signals: Mapping[str, str] = field(default_factory=dict)  # SIGNALS name -> this suite's metric
    # rule symptom -> advice naming its knobs: a sentence, or alternatives a cell is offered
    # unless it already has the knob values they ask for
    remedies: Mapping[str, str | tuple[Advice, ...]] = field(default_factory=dict)
    limits: tuple[LimitBenchmark, ...] = ()
    # the suite reports quality metrics it learns only at run time (a user's program's logged
    # values): a target may name any of them, its comparison stating which way is better
    open_quality: bool = False
    # why a cell with these params cannot be time-sliced by `harness ab` (it relies on
    # wall-clock timeouts that a SIGSTOP of its group would trip), or None: it can
    sliceable: Callable[[Any], str | None] | None = None
    # what limits a cell (a process group's role: main, workers, server, helper; or a rule's
    # symptom, as `remedies` keys them) -> the knob moves that relieve it, first to try first
    # (harness tune); the remedies' Advice values count too (harness.tune.space.moves_for)
    relieves: Mapping[str, tuple[Move, ...]] = field(default_factory=dict)

    def resolve(self, params_model: type | None) -> Vocabulary:
        """This vocabulary with the conventional params filled in from the Params model."""
        fields = set(getattr(params_model, "model_fields", {}) or {})

        def pick(declared: str | None, conventional: str) -> str | None:
            if declared is not None:
                return declared
            return conventional if conventional in fields else None

        return Vocabulary(
            **{
                **self.__dict__,
                "workers": pick(self.workers, "workers"),
                "backend": pick(self.backend, "backend"),
                "device": pick(self.device, "device"),
            }
        )

    # ------------------------------------------------------------------ reading records
    def headline(
        self,
        metric_names: set[str] | frozenset[str],
        invalid: set[str] | frozenset[str] = frozenset(),
        declared: str | None = None,
    ) -> str | None:
        """The rate these metrics are judged by: the first declared rate reported and not
        `invalid` (its `<counter>_per_s` marked invalid by the probe: too few completions
        in the window), else the rate the records declared at run time (`declared`, from
        their HEADLINE_METRIC), else the first `*_per_s` rate (drift slopes aside),
        alphabetically."""
        if not self.rates and declared in metric_names and declared not in invalid:
            return declared
        for rate in self.rates:
            if rate.per_s in invalid:
                continue
            if rate.metric in metric_names:
                return rate.metric
            if rate.per_s in metric_names:
                return rate.per_s
        generic = sorted(
            n
            for n in metric_names
            if n.endswith(("_per_s", "_per_min"))
            and "_drift_" not in n
            and n.removesuffix("_per_min") + "_per_s" not in invalid
        )
        return generic[0] if generic else None

    def columns(self, present: set[str] | frozenset[str]) -> list[str]:
        """Metrics worth a column, in order, among those present: the declared rates (or,
        with none declared, every rate), the suite's report metrics, the harness's own."""
        rates = [r.metric if r.metric in present else r.per_s for r in self.rates]
        if not self.rates:
            rates = sorted(n for n in present if n.endswith(("_per_s", "_per_min")) and "_drift_" not in n)
        completed = [f"{self.rates[0].counter}_in_window"] if self.rates else []  # units the window held
        wanted = [*rates, *completed, *self.report, *HARNESS_REPORT]
        return [m for m in dict.fromkeys(wanted) if m in present]

    def signal(self, name: str) -> str:
        """This suite's metric name for a generic signal (the generic name when unmapped)."""
        return self.signals.get(name, name)

    def remedy(self, symptom: str, default: str, params: Mapping[str, Any] | None = None) -> str:
        """The suite's advice for a symptom in a cell with `params`, else `default`."""
        advice = self.remedies.get(symptom, default)
        if isinstance(advice, str):
            return advice
        params = params or {}
        offered = [a.render(params) for a in advice if not a.already(params)]
        return " or ".join(offered) if offered else default

    def quality_metric(self, metric: str) -> Quality | None:
        return next((q for q in self.quality if q.metric == metric), None)

    def direction(self, metric: str) -> Better | None:
        """Which way is better: declared first (quality, metrics, rates), then by name."""
        quality = self.quality_metric(metric)
        if quality is not None:
            return quality.better
        if metric in self.metrics:
            return self.metrics[metric]
        return direction(metric)

    def names(self) -> set[str]:
        """Every metric and param name this vocabulary declares (for tests and docs)."""
        out = {r.counter for r in self.rates} | {r.metric for r in self.rates}
        out |= {r.made_of for r in self.rates if r.made_of}
        out |= {q.metric for q in self.quality} | set(self.metrics) | set(self.report)
        out |= set(self.signals.values())
        out |= {n for n in (self.workers, self.backend, self.device) if n}
        if self.reference is not None:
            out |= set(self.reference.params) | set(self.reference.prefer) | {self.reference.metric}
        for limit in self.limits:
            out |= {limit.achieved, limit.at}
        return out


EMPTY = Vocabulary()

# Records the harness writes itself, not from a suite: `harness watch` watches a program
# that declares nothing, so the harness says how its record reads (generic names only).
WATCH_SUITE = "watch"
WATCH = Vocabulary(
    report=("watch_cpu_pct", "stacks_samples", "batch_mean"),
    metrics={"watch_cpu_pct": "lower", "watch_cpu_s": "lower", "torch_hook_s": "lower"},
    remedies={
        "small_batches": (
            "several threads call one net with tiny batches: queue their inputs and run one batched call "
            "(one inference thread, or a server process for many workers)"
        ),
    },
)
OWN_VOCABULARIES: dict[str, Vocabulary] = {WATCH_SUITE: WATCH}


def direction(metric: str) -> Better | None:
    """Which way is better for a metric nobody declared, from its name; None when it
    does not say. Rates and batch sizes (a bigger inference batch amortises a forward
    pass) go up; latencies, times and memory go down. Utilisation and counters have no
    direction: 99 % GPU busy can be thrash as well as good use."""
    if metric in HARNESS_METRICS:
        return HARNESS_METRICS[metric]
    tokens = metric.split("_")
    if "_drift_" in metric:
        return None  # a slope is better closer to zero, either way; its error and span are how sure
    if tokens[-1] in ("count", "hist"):
        return None  # how many observations, not how good they were
    if metric.endswith(("_per_s", "_per_min")):
        return "higher"
    if tokens[0] == "batch" and tokens[-1] in _BATCH_STATS:
        return "higher"
    if _LOWER_TOKENS & set(tokens):
        return "lower"
    return None
