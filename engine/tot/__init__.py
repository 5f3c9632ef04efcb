"""Tree of Thoughts (tot-protocol.zh.md): the thought tree, the agents' messages, BFS and
DFS searches over roles that are plain callables, and the Game of 24 with exact arithmetic.

| module | what it holds |
| --- | --- |
| `errors.py` | `ToTError`, the seed's four codes and BUDGET_EXHAUSTED |
| `tree.py` | `ThoughtNode` (its status state machine), `ThoughtTree`, `SearchState` |
| `messages.py` | `make_message`, `check_reply` / `check_message`: every message type's shape |
| `search.py` | `SearchConfig` (the task-type table's defaults), `run_tot` → `ToTRun` |
| `game24.py` | `solve`, `verify`, the builtin roles (`builtin_roles`) |
| `fields.py` | the checkers behind INVALID_FORMAT messages that name the field |
"""
from .errors import (
                     BUDGET_EXHAUSTED,
                     ERROR_CODES,
                     EVALUATION_TIMEOUT,
                     GENERATION_FAILED,
                     INVALID_FORMAT,
                     SEARCH_EXHAUSTED,
                     ToTError,
)
from .game24 import builtin_roles, check_final_solution, solve, verify
from .messages import ROLES, check_message, check_reply, make_message
from .search import TASK_TYPES, SearchConfig, ToTRun, run_tot
from .tree import STATUSES, SearchState, ThoughtNode, ThoughtTree

__all__ = [
    "BUDGET_EXHAUSTED", "ERROR_CODES", "EVALUATION_TIMEOUT", "GENERATION_FAILED", "INVALID_FORMAT", "ROLES",
    "SEARCH_EXHAUSTED", "STATUSES", "TASK_TYPES", "SearchConfig", "SearchState", "ThoughtNode", "ThoughtTree",
    "ToTError", "ToTRun", "builtin_roles", "check_final_solution", "check_message", "check_reply", "make_message", "run_tot", "solve",
    "verify",
]
