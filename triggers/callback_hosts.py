"""Which callback URLs may ever be called: http(s), no user or password, and a host that
operators list in CALLBACK_ALLOWED_HOSTS. Asked when a URL is given (a refusal names its
host) and again before each attempt, so a host taken off the list is never called."""
from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings

from core.errors import DocumentError


def host_of(url: str) -> str:
    """The URL's host (and port, when it names one), lower case; "" when it has none."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return ""
    return f"{host}:{port}" if host and port else host


def callback_url_problem(url: str) -> str | None:
    """Why `url` may not be called back, or None when it may."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port out of range raises here
    except ValueError:
        return "is not a URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an http or https URL with a host"
    if parts.username or parts.password:
        return "must not hold a user or password"
    host = host_of(url)
    allowed = settings.CALLBACK_ALLOWED_HOSTS
    if host not in allowed and (parts.hostname or "").lower() not in allowed:
        listed = ", ".join(allowed) if allowed else "none: the operators list none"
        return f"names the host '{host}', which is not among the hosts callbacks may call (CALLBACK_ALLOWED_HOSTS: {listed})"
    return None


def check_callback_url(url: str, *, where: str) -> str:
    """`url` stripped, or DocumentError (422) at `where` naming its host; "" stays "" (no callback)."""
    url = (url or "").strip()
    if not url:
        return ""
    if len(url) > 2000:
        raise DocumentError("is longer than 2000 characters", where=where)
    problem = callback_url_problem(url)
    if problem:
        raise DocumentError(f"the callback URL {problem}", where=where, details={"host": host_of(url)})
    return url
