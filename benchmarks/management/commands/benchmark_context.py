"""`manage.py benchmark_context`: the command is benchmarks/context.py's."""
from benchmarks.context import Command

__all__ = ["Command"]
