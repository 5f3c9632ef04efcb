"""The compression cache shared by all workers: Django's cache (Redis in this project).

`RedisCompressionCache` implements engine.compression.CompressionCache on
`django.core.cache.caches["default"]` (CACHES in project/settings.py: RedisCache on
REDIS_URL), so every worker sees what any other compressed. Entries live
`COMPRESSION_CACHE_SECONDS` (default 7 days).

The cache is an optimisation: when it fails (Redis down, a timeout) a node still runs.
`get` and `set` log the error and raise it on; `engine.compression.compress_text` counts
a failed get as a miss and a failed set as a write not made, and writes the error to the
dependency's `cache_error`, which the node run stores in its `compression` record.
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.core.cache import BaseCache, caches

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 7 * 24 * 60 * 60
TIMEOUT_SETTING = "COMPRESSION_CACHE_SECONDS"
FROM_SETTINGS = object()  # timeout: COMPRESSION_CACHE_SECONDS


def compression_cache_timeout() -> int | None:
    """COMPRESSION_CACHE_SECONDS from the settings, 7 days when unset (None: no expiry)."""
    return getattr(settings, TIMEOUT_SETTING, DEFAULT_TIMEOUT_SECONDS)


class RedisCompressionCache:
    """CompressionCache on a Django cache backend (by default caches[alias])."""

    def __init__(self, backend: BaseCache | None = None, *, alias: str = "default", timeout=FROM_SETTINGS):
        """`timeout` in seconds (None: no expiry); by default COMPRESSION_CACHE_SECONDS."""
        self.backend = backend if backend is not None else caches[alias]
        self.timeout = compression_cache_timeout() if timeout is FROM_SETTINGS else timeout

    def get(self, key: str) -> str | None:
        try:
            value = self.backend.get(key)
        except Exception as error:
            _log_failure("get", key, error)
            raise
        return value if isinstance(value, str) else None

    def set(self, key: str, value: str) -> None:
        try:
            self.backend.set(key, value, timeout=self.timeout)
        except Exception as error:
            _log_failure("set", key, error)
            raise


def _log_failure(operation: str, key: str, error: Exception) -> None:
    logger.warning("compression cache %s failed (key %s): %s: %s; the node goes on without the cache",
                   operation, key, type(error).__name__, error)
