"""A training loop that reports its progress in one of the shapes real programs use, and
nothing else: no harness code, no JSON lines of ours. `python progress_formats.py FORMAT
[SECONDS]`; each step takes ~5 ms of CPU.

table       a Stable-Baselines3-style `| key | value |` table every 20 steps (stdout)
tqdm        a tqdm bar (stderr), restarting each epoch of 200 steps
iteration   `Iteration N (X iter/s)` every 20 steps (a logging line on stderr)
frames      `After N frames: @ X fps` every 20 steps
pairs       `global_step=N loss=L` every 20 steps
json        `{"global_step": N, "loss": L}` every 20 steps
csv         a progress.csv (header, a row every 20 steps) in the working directory, no output
tensorboard event files under runs/ (torch.utils.tensorboard), no output
"""

import csv
import json
import logging
import sys
import time


def step() -> None:
    end = time.process_time() + 0.005
    while time.process_time() < end:
        pass


def main(fmt: str, seconds: float) -> None:
    start = time.time()
    steps = 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    writer = bar = csv_file = None
    if fmt == "tensorboard":
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter("runs/demo", flush_secs=1, max_queue=1)
    if fmt == "csv":
        csv_file = open("progress.csv", "w", newline="")  # noqa: SIM115
        out = csv.writer(csv_file)
        out.writerow(["time/total_timesteps", "time/fps", "train/loss"])
    if fmt == "tqdm":
        from tqdm import tqdm
    last_t, last_steps = start, 0
    while time.time() - start < seconds:
        if fmt == "tqdm" and steps % 200 == 0:
            if bar is not None:
                bar.close()
            bar = tqdm(total=200, mininterval=0.1, desc=f"epoch {steps // 200}")
        step()
        steps += 1
        if bar is not None:
            bar.update(1)
        if steps % 20:
            continue
        now = time.time()
        fps = steps / (now - start)
        loss = 1.0 / steps
        if fmt == "table":
            print("-" * 33)
            print("| time/              |          |")
            print(f"|    fps             | {fps:<8.0f} |")
            print(f"|    total_timesteps | {steps:<8d} |")
            print("| train/             |          |")
            print(f"|    loss            | {loss:<8.3g} |")
            print("-" * 33, flush=True)
        elif fmt == "iteration":
            logging.info("Iteration %d (%.1f iter/s)", steps, (steps - last_steps) / (now - last_t))
        elif fmt == "frames":
            print(f"After {steps} frames: @ {fps:.1f} fps", flush=True)
        elif fmt == "pairs":
            print(f"global_step={steps} loss={loss:.4f}", flush=True)
        elif fmt == "json":
            print(json.dumps({"global_step": steps, "loss": loss}), flush=True)
        elif fmt == "csv":
            out.writerow([steps, round(fps), loss])
            csv_file.flush()
        elif writer is not None:
            writer.add_scalar("charts/SPS", fps, steps)
            writer.add_scalar("losses/loss", loss, steps)
        last_t, last_steps = now, steps
    if writer is not None:
        writer.close()


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 3600.0)
