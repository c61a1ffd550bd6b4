"""A self-play trainer in Ray actors, shaped as issue 43's: each self-play worker searches
every move with a few hundred simulated games (random playouts of tic-tac-toe from the
position), which its engine logs as `step N` (N: the simulated game's number in this move's
search, from 1 again at every move), so the lines come in bursts of hundreds; then it waits
for the learner's next weights (a training step elsewhere, modelled by a wait of 8.5-17.5 s)
and reports the move it played: `game G move M`, one move per worker every 9-18 s.

Its progress is its moves: one `game G move M` line each. `step N` is an index within a
move's search and `move M` an index within a game, interleaved across workers: neither is a
running total nor per-report increments. Arguments: the number of workers (default 2), and
`ray` (default: Ray prints each worker's lines with its `(SelfPlayWorker pid=...)` prefix,
as it forwards them from the workers' log files, in batches) or `processes` (the same
workers as multiprocessing processes writing to the stdout they share, as their lines come:
the workers' bursts interleave line by line).
"""

import random
import sys
import time

import ray

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


def winner(board):
    for a, b, c in LINES:
        if board[a] and board[a] == board[b] == board[c]:
            return board[a]
    return 0 if all(board) else None


def playout(board, player, rng):
    """One simulated game to its end from `board`, `player` to move: the winner (0: a draw)."""
    board = list(board)
    while (result := winner(board)) is None:
        board[rng.choice([i for i, v in enumerate(board) if not v])] = player
        player = 3 - player
    return result


class SelfPlayWorker:
    def __init__(self, seed):
        self.rng = random.Random(seed)

    def play(self):
        game = 0
        while True:
            game += 1
            board, player, move = [0] * 9, 1, 0
            while winner(board) is None:
                started = time.monotonic()
                move += 1
                legal = [i for i, v in enumerate(board) if not v]
                wins = dict.fromkeys(legal, 0)
                simulations = self.rng.randint(200, 400)
                for step in range(1, simulations + 1):
                    first = legal[step % len(legal)]
                    trial = list(board)
                    trial[first] = player
                    wins[first] += playout(trial, 3 - player, self.rng) == player
                    print(f"step {step}", flush=True)
                time.sleep(self.rng.uniform(8.5, 17.5))  # the learner's next weights
                board[max(legal, key=wins.get)] = player
                player = 3 - player
                print(f"game {game} move {move} ({time.monotonic() - started:.1f} s)", flush=True)


def run_process(seed):
    SelfPlayWorker(seed).play()


if __name__ == "__main__":
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    if (sys.argv[2] if len(sys.argv) > 2 else "ray") == "processes":
        import multiprocessing as mp

        procs = [mp.Process(target=run_process, args=(seed,)) for seed in range(workers)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join()
    else:
        ray.init(num_cpus=workers, include_dashboard=False)
        actors = [ray.remote(SelfPlayWorker).remote(seed) for seed in range(workers)]
        ray.get([actor.play.remote() for actor in actors])
