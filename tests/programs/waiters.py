"""Two processes, one waiting on the other through a known channel, for the wait-edge tests:
`pipe` (reads an os.pipe the other writes to), `socket` (recv on a socketpair),
`queue` (get on a multiprocessing Queue), `event` (wait on a multiprocessing Event). The
waiter is the child; the parent is busy (a CPU loop) and feeds it rarely. Prints the
waiter's pid, then the busy one's.
"""

import multiprocessing as mp
import os
import socket
import sys
import time


def busy(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def waiter(kind, channel):
    while True:
        if kind == "pipe":
            os.read(channel, 1)
        elif kind == "socket":
            channel.recv(1)
        elif kind == "queue":
            channel.get()
        else:
            channel.wait()
            channel.clear()


if __name__ == "__main__":
    kind = sys.argv[1]
    ctx = mp.get_context("fork")
    if kind == "pipe":
        r, w = os.pipe()
        channel, send = r, lambda: os.write(w, b"x")
    elif kind == "socket":
        a, b = socket.socketpair()
        channel, send = b, lambda: a.send(b"x")
    elif kind == "queue":
        channel = ctx.Queue()
        send = lambda: channel.put(1)  # noqa: E731
    else:
        channel = ctx.Event()
        send = channel.set
    child = ctx.Process(target=waiter, args=(kind, channel), daemon=True)
    child.start()
    print(child.pid, os.getpid(), flush=True)
    while True:
        busy(0.5)
        send()
