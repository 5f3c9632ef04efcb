"""The compression cache on Django's cache (Redis): executions/compression_cache.py.

These tests talk to the real Redis at REDIS_URL (CACHES["default"]); every key they write
is unique to the test and deleted afterwards.
"""
import socket
import uuid

import pytest
import redis
from django.conf import settings as django_settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache

from engine.compression import cache_key, compress_dependencies
from executions.compression_cache import (
    DEFAULT_TIMEOUT_SECONDS,
    RedisCompressionCache,
    compression_cache_timeout,
)


def _redis_answers(url):
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2).ping())
    except redis.RedisError:
        return False


@pytest.fixture
def raw():
    """A client of its own on the Redis behind CACHES["default"]; deletes what the test wrote."""
    url = django_settings.CACHES["default"]["LOCATION"]
    if not _redis_answers(url):
        pytest.fail(f"No Redis answers at {url} (REDIS_URL); run the tests with bin/test.")
    client = redis.Redis.from_url(url)
    written = []
    client.written = written
    yield client
    backend = caches.create_connection("default")
    for key in written:
        client.delete(backend.make_key(key))
    client.close()


def unique_report(lines=80):
    token = uuid.uuid4().hex
    return "\n".join(f"finding {i} of run {token}: latency went down by {i} ms" for i in range(lines))


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_it_uses_the_default_cache_which_is_redis():
    cache = RedisCompressionCache()
    assert cache.backend is caches["default"]
    assert isinstance(cache.backend, RedisCache)


def test_entries_round_trip_through_the_real_redis_with_the_ttl(raw):
    cache = RedisCompressionCache()
    key = cache_key(unique_report(), 0.3, "flash")
    raw.written.append(key)

    assert cache.get(key) is None
    cache.set(key, "压缩后的内容\nline two")

    assert cache.get(key) == "压缩后的内容\nline two"
    stored = caches["default"].make_key(key)
    assert raw.exists(stored)
    timeout = compression_cache_timeout()
    assert timeout == getattr(django_settings, "COMPRESSION_CACHE_SECONDS", DEFAULT_TIMEOUT_SECONDS)
    assert timeout - 60 <= raw.ttl(stored) <= timeout


def test_the_ttl_comes_from_compression_cache_seconds(raw, settings):
    settings.COMPRESSION_CACHE_SECONDS = 120
    cache = RedisCompressionCache()
    key = cache_key(unique_report(), 0.3, "flash")
    raw.written.append(key)

    cache.set(key, "x")

    assert cache.timeout == 120
    assert 60 <= raw.ttl(caches["default"].make_key(key)) <= 120


def test_without_the_setting_entries_live_seven_days(settings):
    if hasattr(settings, "COMPRESSION_CACHE_SECONDS"):
        del settings.COMPRESSION_CACHE_SECONDS
    assert RedisCompressionCache().timeout == DEFAULT_TIMEOUT_SECONDS == 604800


def test_two_workers_share_their_compressions(raw):
    # Two cache backends, each with its own Redis client and connection pool, as two
    # worker processes would have.
    worker_a = RedisCompressionCache(caches.create_connection("default"))
    worker_b = RedisCompressionCache(caches.create_connection("default"))
    assert worker_a.backend is not worker_b.backend
    pools = [worker.backend._cache.get_client(write=True).connection_pool for worker in (worker_a, worker_b)]
    assert pools[0] is not pools[1]

    outputs = {"task_a": unique_report(), "task_b": unique_report(120)}
    raw.written += [cache_key(text, 0.3, "flash") for text in outputs.values()]
    calls = []

    def compressor(content, ratio, model):
        calls.append(content)
        return "\n".join(content.splitlines()[:: round(1 / ratio)])

    first = compress_dependencies(outputs, ratio=0.3, model="flash", cache=worker_a, compressor=compressor)
    second = compress_dependencies(outputs, ratio=0.3, model="flash", cache=worker_b, compressor=compressor)

    assert len(calls) == 2  # only the first worker compressed
    assert [s.cache_hit for s in first.sections] == [False, False]
    assert [s.cache_hit for s in second.sections] == [True, True]
    assert second.text == first.text
    # and a client that has nothing to do with Django's sees the entries too
    assert all(raw.exists(worker_a.backend.make_key(key)) for key in raw.written)

    # Another ratio or model is another entry.
    third = compress_dependencies(outputs, ratio=0.5, model="flash", cache=worker_b, compressor=compressor)
    raw.written += [cache_key(text, 0.5, "flash") for text in outputs.values()]
    assert [s.cache_hit for s in third.sections] == [False, False] and len(calls) == 4


def test_a_redis_that_is_down_is_a_miss_the_node_goes_on_and_the_error_is_on_the_record(settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port()}/0",
            "KEY_PREFIX": "switchyard",
        }
    }
    cache = RedisCompressionCache()  # caches were reset by the settings change
    assert cache.backend is caches["default"]

    with pytest.raises(redis.ConnectionError):
        cache.get("compress:v1:abc:0.3:flash")
    with pytest.raises(redis.ConnectionError):
        cache.set("compress:v1:abc:0.3:flash", "compressed")

    calls = []

    def compressor(content, ratio, model):
        calls.append(content)
        return content[: len(content) // 3]

    outputs = {"task_a": unique_report()}
    result = compress_dependencies(outputs, cache=cache, compressor=compressor)
    assert len(calls) == 1
    assert not result.sections[0].failed and not result.sections[0].cache_hit
    assert result.sections[0].text == outputs["task_a"][: len(outputs["task_a"]) // 3]
    (dependency,) = result.record()["dependencies"]
    assert dependency["cache_error"].startswith("get: ConnectionError")
    assert "; set: ConnectionError" in dependency["cache_error"]


def test_it_keeps_its_timeout():
    cache = RedisCompressionCache(RedisCache(f"redis://127.0.0.1:{closed_port()}/0", {}), timeout=60)
    assert cache.timeout == 60
