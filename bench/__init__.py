"""Benchmarks (not part of the test run): ``bin/bench`` runs ``bench.run`` and writes docs/benchmarks.md.

A package so that ``python -m bench.run`` and the smoke test import the sections instead of copying
them; each ``bench_*.py`` still runs on its own as a script.
"""
