"""`python -m harness.cell CELL_JSON OUT_JSONL`: the child's entry point (main.py)."""

import sys

from harness.cell.main import main

if __name__ == "__main__":  # importing the package's modules one by one must not start a cell
    sys.exit(main(sys.argv[1:]))
