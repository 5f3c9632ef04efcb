"""Locks held in Redis, for work that must not run twice at once, even on two machines."""
import logging
from contextlib import contextmanager

import redis
from django.conf import settings

logger = logging.getLogger(__name__)


@contextmanager
def redis_lock(name: str, *, timeout: float):
    """Hold the lock `name` (at REDIS_URL) while the block runs, if nobody else holds it.
    Yields True, or False at once when it is held elsewhere: the caller skips its work
    rather than waiting to do it twice. The lock expires after `timeout` seconds, so a
    holder that died frees it."""
    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=5)
    lock = client.lock(f"switchyard:lock:{name}", timeout=timeout)
    try:
        acquired = lock.acquire(blocking=False)
        try:
            yield acquired
        finally:
            if acquired:
                try:
                    lock.release()
                except redis.exceptions.LockError:  # held past its timeout: it expired, and may be another's now
                    logger.warning("the lock %r expired before its holder finished (timeout %s s)", name, timeout)
    finally:
        client.close()
