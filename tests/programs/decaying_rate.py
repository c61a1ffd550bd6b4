"""A loop whose rate decays as its state grows, or stays flat; it logs the rate it sees.

`decay`: each step costs more as the run goes on (its sleep stands for work on a growing
buffer); `flat`: every step costs the same.
"""

import sys
import time

if __name__ == "__main__":
    mode = sys.argv[1]
    start = t = time.time()
    steps = last = 0
    while True:
        grown = (time.time() - start) / 4.0 if mode == "decay" else 0.0
        time.sleep(0.02 * (1.0 + grown))
        steps += 1
        if time.time() - t >= 0.25:
            print(f"Iteration {steps} ({(steps - last) / (time.time() - t):.2f} iter/s)", flush=True)
            last, t = steps, time.time()
