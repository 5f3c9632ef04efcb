"""Requests per minute per workflow key, counted in Redis (the Django cache is Redis): one
counter per key and clock minute, created with the minute and gone two minutes later.

Every process counts in the same place, so the limit holds however many web processes
answer. A Redis that does not answer lets the request through (logged): the limit guards
the workers' time, and refusing every key while Redis is away would stop more than it saves."""
from __future__ import annotations

import logging
import math
import time

from django.core.cache import cache

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60


def retry_after(prefix: str, per_minute: int, *, now: float | None = None) -> int | None:
    """Count one request of the key `prefix`: None while it is within `per_minute`, else the
    seconds until the next minute begins (the Retry-After of the 429)."""
    now = time.time() if now is None else now
    window = int(now // WINDOW_SECONDS)
    counter = f"triggers:rate:{prefix}:{window}"
    try:
        cache.add(counter, 0, timeout=2 * WINDOW_SECONDS)
        count = cache.incr(counter)
    except Exception:  # noqa: BLE001 - any failure of the cache: count nothing, refuse nothing
        logger.warning("workflow key %s: the rate limit's counter could not be read; the request is let through",
                       prefix, exc_info=True)
        return None
    if count <= per_minute:
        return None
    return max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
