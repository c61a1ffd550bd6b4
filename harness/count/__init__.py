"""Counting the work: an A/B of instructions per unit of the program's own progress, under
valgrind's callgrind (harness ab/gate --measure instructions; docs/guide/counting.md).

callgrind.py finds valgrind and reads its output; window.py runs the program under it and
counts between two marks of its progress (hook/sitecustomize.py marks them from inside).
"""
