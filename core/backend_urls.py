"""The base URL of an LLM backend: which are accepted, and how one is shown.

A base URL is shown to admins (`/api/backends`) and in the errors of the calls made to it,
which node runs keep and every viewer of a run reads. So it must hold nothing secret: the
key travels in a header, from the environment variable the backend names (`api_key_env`).
A URL with a user or password, or with a query string (`?key=…` is how several providers
take a key, and nothing tells a key from an ordinary parameter), is refused; one that is
shown anyway (a setting made some other way) is shown without them.

This module is read by the settings, so it imports nothing of Django's.
"""
from __future__ import annotations

import urllib.parse

MAX_LENGTH = 2000
NOT_SHOWN = "(a URL that is not http(s), not shown)"


def base_url_problem(url: object) -> str | None:
    """What is wrong with `url` as a backend's base URL, in words that never repeat it; None
    when it is an http:// or https:// URL with a host, no user or password, no query and no
    fragment."""
    if not isinstance(url, str) or not url:
        return "must be an http:// or https:// URL, e.g. https://api.example.com/v1"
    if len(url) > MAX_LENGTH:
        return f"must be at most {MAX_LENGTH} characters long"
    if any(char.isspace() or not char.isprintable() for char in url):
        return "must be an http:// or https:// URL without spaces or control characters"
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return "must be an http:// or https:// URL with a host, e.g. https://api.example.com/v1"
    if "@" in parts.netloc:
        return ("must be an http:// or https:// URL without user or password: the key is read from the "
                "environment variable that api_key_env names")
    if not parts.hostname:
        return "must be an http:// or https:// URL with a host, e.g. https://api.example.com/v1"
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0 or (parts.netloc.endswith(":") and port is None):
        return "has a port that is not a number from 1 to 65535"
    if "?" in url:
        return ("must have no query string (?…): a query is where providers take keys, and this URL is shown "
                "to admins and in errors; the key is read from the environment variable that api_key_env names")
    if "#" in url:
        return "must have no fragment (#…)"
    return None


def shown_url(url: object) -> str:
    """`url` as it may be shown: scheme, host, port and path; never a user, a password, a
    query or a fragment. What is not an http(s) URL with a host is not shown at all (without
    a scheme, "user:key@host" reads as a scheme "user" and a path that holds the key)."""
    if not isinstance(url, str):
        return NOT_SHOWN
    parts = urllib.parse.urlsplit(url.strip())
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        return NOT_SHOWN
    if parts.scheme.lower() not in ("http", "https") or not host:
        return NOT_SHOWN
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    if port is not None:
        host = f"{host}:{port}"
    return urllib.parse.urlunsplit((parts.scheme.lower(), host, parts.path, "", ""))
