"""A cancel told to the workers at once, over Redis pub/sub, so that a node running for the
cancelled run stops in a moment rather than at its worker's next heartbeat.

The notice only wakes the heartbeat thread of each worker process performing a node run of
that run (services/node_run.py's `_Heartbeats`): the beat then touches its node runs as it
always does, finds the cancelled one, and stops its work. The database stays the one
authority on what was cancelled; a notice lost (Redis away, a worker subscribing late) costs
only time, up to NODE_HEARTBEAT_SECONDS.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import cache

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

CHANNEL = "switchyard:executions:cancelled"
RECONNECT_SECONDS = 5.0


def _client(**options) -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, **options)


@cache
def _publisher(url: str) -> redis.Redis:
    """One client per process (and REDIS_URL) for the notices it sends: a bulk cancel sends
    one per run. Its connection pool starts afresh in a forked child."""
    return _client(socket_timeout=2)


def announce(execution_pk: int) -> None:
    """Tell the workers that the run `execution_pk` was cancelled (once its cancel has
    committed). Never fails the cancel: a notice not sent is logged."""
    try:
        _publisher(settings.REDIS_URL).publish(CHANNEL, str(execution_pk))
    except redis.RedisError:
        logger.warning("could not announce the cancel of execution %s: its workers stop its nodes at their next "
                       "heartbeat", execution_pk, exc_info=True)


def listen(heard: Callable[[int], None]) -> None:
    """Call `heard(execution_pk)` for each cancel announced, for ever: the loop of a daemon
    thread, which subscribes again after Redis goes away."""
    while True:
        try:
            pubsub = _client(health_check_interval=30).pubsub(ignore_subscribe_messages=True)
            pubsub.subscribe(CHANNEL)
            for message in pubsub.listen():
                if message.get("type") == "message":
                    _heard(heard, message.get("data"))
        except redis.RedisError:
            logger.warning("lost the subscription to cancel notices; subscribing again in %g s", RECONNECT_SECONDS,
                           exc_info=True)
        time.sleep(RECONNECT_SECONDS)


def _heard(heard: Callable[[int], None], data) -> None:
    try:
        execution_pk = int(data)
    except (TypeError, ValueError):
        return
    heard(execution_pk)
