"""Which group of a program's processes limits its throughput, measured by slowing each in
turn (harness causal): the experiment (experiment.py), its groups (groups.py), the stopper
and watchdog process (stopper.py), the statistics (sensitivity.py), what it found (result.py)."""
