"""The retention sweep, on the beat: what the rules select now (`retention/policy.py`),
deleted in bounded batches (`retention/purge.py`), at most RETENTION_SWEEP_MAX_BATCHES
transactions per sweep; the next sweep goes on where this one stopped. One sweep at a time,
behind a lock in Redis."""
from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from core.locks import redis_lock
from retention.policy import selections
from retention.purge import Purge

logger = logging.getLogger(__name__)


def retention_sweep(*, now: datetime | None = None, max_batches: int | None = None) -> dict[str, Any]:
    """Apply every rule once; the report of what went and what was kept back, and why."""
    purge = Purge(batch=settings.RETENTION_BATCH, max_batches=max_batches or settings.RETENTION_SWEEP_MAX_BATCHES,
                  pause=settings.RETENTION_PAUSE)
    for what, runs in selections(now or timezone.now()):
        purge.run(what, runs)
        if purge.report.stopped:
            break
    report = purge.report.as_dict()
    if report["batches"]:
        logger.info("retention: %s", report)
    return report


def retention_sweep_exclusive(*, now: datetime | None = None) -> dict[str, Any]:
    """The sweep, unless another holds the lock (two beats): then nothing, saying so."""
    with redis_lock(f"retention:{settings.CELERY_TASK_DEFAULT_QUEUE}", timeout=settings.RETENTION_LOCK_SECONDS) \
            as acquired:
        if not acquired:
            logger.info("retention sweep skipped: another sweep holds the lock")
            return {"skipped": "another retention sweep is running"}
        return retention_sweep(now=now)
