"""LLM backends: what runs a node once its context is assembled (see agents/README.md)."""
from .base import Backend, BackendError, BackendRequest, BackendResponse, ToolRequest
from .builtin import choose_skill
from .registry import build_backend, clear_cache, get_backend

__all__ = [
    "Backend", "BackendError", "BackendRequest", "BackendResponse", "ToolRequest",
    "build_backend", "choose_skill", "clear_cache", "get_backend",
]
