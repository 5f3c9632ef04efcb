"""The compression cache shared by all workers: Django's cache (Redis in this project).

`RedisCompressionCache` implements engine.compression.CompressionCache on
`django.core.cache.caches["default"]` (CACHES in project/settings.py: RedisCache on
REDIS_URL), so every worker sees what any other compressed. Entries live
`COMPRESSION_CACHE_SECONDS` (default 7 days).

The cache is an optimisation: when it fails (Redis down, a timeout) a node still runs.
`get` then answers None (a miss) and `set` does nothing; the error is logged and kept in
`last_error` (and counted in `error_count`) for the node run's record.
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
        self.last_error: str | None = None  # the most recent cache error, None if there was none
        self.error_count = 0

    def _failed(self, operation: str, key: str, error: Exception) -> None:
        self.last_error = f"compression cache {operation} failed: {type(error).__name__}: {error}"
        self.error_count += 1
        logger.warning("%s (key %s); going on without the cache", self.last_error, key)

    def get(self, key: str) -> str | None:
        try:
            value = self.backend.get(key)
        except Exception as error:  # noqa: BLE001 - Redis down or slow: a miss
            self._failed("get", key, error)
            return None
        return value if isinstance(value, str) else None

    def set(self, key: str, value: str) -> None:
        try:
            self.backend.set(key, value, timeout=self.timeout)
        except Exception as error:  # noqa: BLE001 - Redis down or slow: not cached
            self._failed("set", key, error)
