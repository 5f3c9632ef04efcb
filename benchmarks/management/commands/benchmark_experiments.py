"""`manage.py benchmark_experiments`: the command is benchmarks/experiments.py's."""
from benchmarks.experiments import Command

__all__ = ["Command"]
