"""selfplay-harness: benchmark and profile parallel game solvers and self-play training."""

__version__ = "0.1.0"
