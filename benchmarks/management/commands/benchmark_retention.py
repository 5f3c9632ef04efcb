"""`manage.py benchmark_retention`: the command is benchmarks/retention.py's."""
from benchmarks.retention import Command

__all__ = ["Command"]
