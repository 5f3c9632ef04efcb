"""`manage.py benchmark_tools`: the command is benchmarks/tools.py's."""
from benchmarks.tools import Command

__all__ = ["Command"]
