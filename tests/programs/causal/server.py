"""N client processes and one server process, as self-play workers and an inference
server: each client computes a little, sends a request and waits for the answer; the server
answers the requests one at a time. Work is CPU time.

    python server.py server|clients [--clients N] [--every S]

`server`: the server works 2 ms a request and a client 0.2 ms between requests: the server
limits, the clients wait on it. `clients`: a client works 4 ms between requests and the
server 0.1 ms: the clients limit (all of them: one group), the server waits. The main
process only reports: every S seconds (default 0.5) `Iteration N`, N the requests served.
"""

import argparse
import multiprocessing as mp
import time


def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def serve(requests, answers, cost, served):
    while True:
        client = requests.get()
        spin(cost)
        answers[client].send(1)
        with served.get_lock():
            served.value += 1


def client(index, requests, conn, cost):
    while True:
        spin(cost)
        requests.put(index)
        conn.recv()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("server", "clients"))
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--every", type=float, default=0.5)
    args = parser.parse_args()
    server_s, client_s = (0.002, 0.0002) if args.mode == "server" else (0.0001, 0.004)
    requests, served = mp.Queue(), mp.Value("l", 0)
    pipes = [mp.Pipe() for _ in range(args.clients)]
    mp.Process(target=serve, args=(requests, [a for a, _ in pipes], server_s, served), daemon=True).start()
    for i, (_, theirs) in enumerate(pipes):
        mp.Process(target=client, args=(i, requests, theirs, client_s), daemon=True).start()
    while True:
        time.sleep(args.every)
        print(f"Iteration {served.value}", flush=True)  # one iteration: one request served


if __name__ == "__main__":
    main()
