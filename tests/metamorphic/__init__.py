"""Metamorphic tests: semantics-preserving rewrites of the corpus cases (see run.py)."""
