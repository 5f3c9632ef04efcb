"""`manage.py benchmark_pages`: the command is benchmarks/pages.py's."""
from benchmarks.pages import Command

__all__ = ["Command"]
