"""How steady is this machine? The noise floor any speed gate has to live with.

A pure-Python spin loop timed in short slices for `--seconds`, on one process and then on
two processes at once (one per core). Prints, for windows of 0.5, 1, 3 and 10 s, the
relative spread (sd / mean) of the rate measured over a window: that is the per-repeat
noise of a cell of that length. Also the autocorrelation of the 1 s rates (how long a slow
spell lasts) and the correlation between the two cores' rates at the same moment (whether
a reference measured beside a cell would cancel the noise).

    python benchmarks/machine_noise.py --seconds 150

Then `python benchmarks/gate_trial.py --simulate SD` with the 10 s spread says what recall
the gate can reach here.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time

import numpy as np

SLICE_LOOPS = 200_000


def spin_slices(seconds: float, start_at: float) -> list[tuple[float, float]]:
    """(start time, duration) of each fixed-size slice of work until `seconds` have passed."""
    while time.time() < start_at:
        pass
    out = []
    end = start_at + seconds
    while time.time() < end:
        started, t0 = time.time(), time.perf_counter()
        total = 0
        for i in range(SLICE_LOOPS):
            total += i * i
        out.append((started, time.perf_counter() - t0))
    return out


def _child(seconds: float, start_at: float, queue: mp.Queue) -> None:
    queue.put(spin_slices(seconds, start_at))


def windowed_rates(slices: list[tuple[float, float]], origin: float, window: float) -> np.ndarray:
    """Slices per second of work done in each whole window."""
    starts = np.array([s for s, _ in slices]) - origin
    took = np.array([d for _, d in slices])
    index = (starts // window).astype(int)
    return np.array([(index == k).sum() / took[index == k].sum() for k in range(index.max()) if (index == k).any()])


def spread(rates: np.ndarray) -> float:
    return float(rates.std() / rates.mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=150.0, help="length of each of the two phases")
    ap.add_argument("--save", default=None, help="write the raw slices as JSON here")
    args = ap.parse_args()

    origin = time.time() + 0.2
    alone = spin_slices(args.seconds, origin)
    ctx = mp.get_context("fork")
    queue: mp.Queue = ctx.Queue()
    pair_origin = time.time() + 0.5
    procs = [ctx.Process(target=_child, args=(args.seconds, pair_origin, queue)) for _ in range(2)]
    for proc in procs:
        proc.start()
    pair = [queue.get() for _ in procs]
    for proc in procs:
        proc.join()

    print(f"one process, {args.seconds:.0f} s; relative spread (sd/mean) of the rate over a window:")
    for window in (0.5, 1.0, 3.0, 10.0):
        rates = windowed_rates(alone, origin, window)
        print(f"  {window:>4} s windows: {spread(rates):6.1%}  ({len(rates)} windows)")
    one_s = np.log(windowed_rates(alone, origin, 1.0))
    one_s -= one_s.mean()
    lags = [1, 2, 4, 8]
    auto = [float(np.corrcoef(one_s[:-k], one_s[k:])[0, 1]) for k in lags]
    print(
        "  autocorrelation of 1 s rates at lags "
        + ", ".join(f"{k} s: {a:.2f}" for k, a in zip(lags, auto, strict=True))
    )
    a, b = (windowed_rates(p, pair_origin, 0.5) for p in pair)
    n = min(len(a), len(b))
    alone_rate = len(alone) / sum(d for _, d in alone)
    together = sum(len(p) / sum(d for _, d in p) for p in pair) / alone_rate
    print(
        f"two processes at once: 0.5 s spread {spread(a):.1%} and {spread(b):.1%}; correlation between "
        f"them {np.corrcoef(a[:n], b[:n])[0, 1]:.2f}; together {together:.2f}x one alone"
    )
    if args.save:
        with open(args.save, "w") as out:
            json.dump({"alone": alone, "pair": pair, "origin": origin, "pair_origin": pair_origin}, out)


if __name__ == "__main__":
    main()
