"""`manage.py benchmark_tot`: the command is benchmarks/tot.py's."""
from benchmarks.tot import Command

__all__ = ["Command"]
