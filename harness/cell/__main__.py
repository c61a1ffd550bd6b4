"""`python -m harness.cell CELL_JSON OUT_JSONL`: the child's entry point (main.py)."""

import sys

from harness.cell.main import main

sys.exit(main(sys.argv[1:]))
