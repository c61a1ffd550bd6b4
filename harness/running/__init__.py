"""Running a sweep from the parent: specs into cells (matrix.py), the missing cell-repeats
through an executor (execute.py, executors/), one cell-repeat in a fresh interpreter with
monitors over its tree (runner.py), a watched program the harness did not start or write
(watching.py), Ctrl-C at safe points (interrupts.py), the progress line (progress.py), and
the facts of the machine and the run (metadata.py, noise.py)."""
