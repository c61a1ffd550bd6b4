"""Watching a program the harness does not control, from outside, with no change to it.

`harness watch -- CMD` (and every cell of a suite that sets `Suite.watch`) runs the
instruments over the program's whole process tree: sampled Python stacks (py-spy), each
process's pipe/socket traffic and context switches (/proc), the batch sizes and devices of
its torch module calls (an injected start-up hook), NVML's view of the GPU, and the rates
the program prints in its log. This package turns what they saw into where the time went,
per process and per role, and into the generic signals the diagnosis rules read.
"""
