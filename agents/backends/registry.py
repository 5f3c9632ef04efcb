"""The backends operators defined in settings (`LLM_BACKENDS`), built on first use.

    LLM_BACKENDS = {
        "builtin": {"kind": "builtin"},
        "openai": {"kind": "openai_compatible", "base_url": "https://api.example.com/v1",
                   "api_key_env": "OPENAI_API_KEY", "model": "gpt-4o-mini",
                   "timeout_seconds": 60, "max_retries": 3},
        "command": {"kind": "command", "argv": ["llm", "-m", "gpt-4o"], "timeout_seconds": 120,
                    "env": ["OPENAI_API_KEY"]},
    }

A backend is built once per name and reused; when its settings entry changes (as tests
do) the next `get_backend` builds it again.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings

from .base import Backend, BackendError
from .builtin import BuiltinBackend
from .command import CommandBackend
from .openai import OpenAICompatibleBackend

KINDS: dict[str, Callable[..., Backend]] = {
    "builtin": BuiltinBackend,
    "openai_compatible": OpenAICompatibleBackend,
    "command": CommandBackend,
}

_cache: dict[str, tuple[str, Backend]] = {}
_lock = threading.Lock()


def build_backend(name: str, config: dict[str, Any]) -> Backend:
    """A backend from one settings entry: `kind` picks the class, the other keys are its options."""
    if not isinstance(config, dict):
        raise BackendError(f"LLM_BACKENDS[{name!r}] must be a dict, not {type(config).__name__}",
                           code="BAD_BACKEND_CONFIG", retryable=False)
    options = dict(config)
    kind = options.pop("kind", None)
    factory = KINDS.get(kind)
    if factory is None:
        raise BackendError(f"LLM_BACKENDS[{name!r}] has kind {kind!r}; known kinds: {', '.join(KINDS)}",
                           code="BAD_BACKEND_CONFIG", retryable=False)
    try:
        return factory(name, **options)
    except TypeError as error:  # an option the kind does not take
        raise BackendError(f"LLM_BACKENDS[{name!r}] ({kind}): {error}", code="BAD_BACKEND_CONFIG",
                           retryable=False) from None


def get_backend(name: str) -> Backend:
    """The backend named `name` in settings.LLM_BACKENDS; UNKNOWN_BACKEND when there is none."""
    backends = getattr(settings, "LLM_BACKENDS", {}) or {}
    if name not in backends:
        available = ", ".join(sorted(backends)) or "none"
        raise BackendError(f"backend {name!r} is not configured in LLM_BACKENDS (available: {available})",
                           code="UNKNOWN_BACKEND", retryable=False)
    config = backends[name]
    key = json.dumps(config, sort_keys=True, default=str)
    with _lock:
        cached = _cache.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        backend = build_backend(name, config)
        _cache[name] = (key, backend)
        return backend


def clear_cache() -> None:
    with _lock:
        _cache.clear()
