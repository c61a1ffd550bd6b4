"""A trainer whose real rate halves halfway through, while the fps it prints is a running
average since the start (`fps = steps / elapsed`, as many loggers compute it), so the
printed number sinks slowly and never shows the halving. It prints a Stable-Baselines3-style
table every 20 steps. `python running_average.py [SECONDS_BEFORE_HALVING]` (default 8).
"""

import sys
import time

if __name__ == "__main__":
    halve_at = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0
    start = time.time()
    steps = 0
    while True:
        elapsed = time.time() - start
        cost = 0.004 if elapsed < halve_at else 0.008
        end = time.process_time() + cost
        while time.process_time() < end:
            pass
        steps += 1
        if steps % 20 == 0:
            fps = steps / (time.time() - start)
            print(
                f"| time/              |          |\n|    fps             | {fps:<8.0f} |\n"
                f"|    total_timesteps | {steps:<8d} |",
                flush=True,
            )
