"""`python -m bench` (`make bench`): rollguard's benchmarks on a fresh sandbox, written to docs/BENCHMARKS.md.

Not part of `make test`: timings depend on the machine, so nothing here asserts on them.
"""
