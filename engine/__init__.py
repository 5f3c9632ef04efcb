"""The pure-Python engine: plain data in, plain data (and records of decisions) out.

Nothing in this package may import Django, Celery, Redis or an app of this project: the
import-linter contracts in .importlinter, run by tests/test_layering.py, keep it that way.
"""
