"""`manage.py benchmark_execution`: the command is benchmarks/execution.py's."""
from benchmarks.execution import Command

__all__ = ["Command"]
