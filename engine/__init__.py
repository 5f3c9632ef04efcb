"""The pure-Python engine: plain data in, plain data (and records of decisions) out.

Nothing in this package may import Django, Celery or Redis; tests/test_layering.py
keeps it that way.
"""
