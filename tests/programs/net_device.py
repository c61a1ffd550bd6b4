"""Worker processes that run a net on the device they were given, falling back to the CPU
without a word when CUDA is not there (the classic silent fallback).

`python net_device.py --device cuda` asks for the GPU; `--device cpu` asks for the CPU.
`--drop-device` is the same failure where CUDA is there: the parent asks for cuda and uses it,
but the device never reaches the workers, which build their nets on the CPU (the bug seen on
a real GPU; without CUDA it changes nothing).
"""

import argparse
import multiprocessing as mp
import time

import torch


def worker(device):
    torch.set_num_threads(1)
    net = torch.nn.Linear(32, 4).to(device)
    x = torch.randn(8, 32, device=device)
    with torch.no_grad():
        while True:
            net(x)
            time.sleep(0.005)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--drop-device", action="store_true", help="workers build their nets on the CPU")
    args = parser.parse_args()
    device = args.device if torch.cuda.is_available() else "cpu"
    if device != "cpu":
        torch.zeros(1, device=device)  # the parent does reach the GPU
    worker_device = "cpu" if args.drop_device else device
    context = mp.get_context("spawn" if device != "cpu" else "fork")  # no fork once CUDA is initialised
    workers = [context.Process(target=worker, args=(worker_device,), daemon=True) for _ in range(2)]
    for w in workers:
        w.start()
    while True:
        time.sleep(0.5)
        print("evaluating", flush=True)
