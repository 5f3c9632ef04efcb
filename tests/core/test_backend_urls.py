"""A backend's base URL: which are accepted, and how one is shown."""
import pytest

from core.backend_urls import base_url_problem, shown_url


@pytest.mark.parametrize("url", [
    "https://api.example.com/v1", "http://127.0.0.1:11434/v1", "http://[::1]:8000", "HTTPS://Api.Example.com/openai/v1",
])
def test_it_accepts_http_and_https_urls_with_a_host(url):
    assert base_url_problem(url) is None


@pytest.mark.parametrize("url, problem", [
    ("", "must be an http:// or https:// URL"),
    (None, "must be an http:// or https:// URL"),
    ("h" * 2001, "at most 2000 characters"),
    ("https://api.example.com/v1\n", "without spaces or control characters"),
    ("ftp://x", "with a host"),
    ("https:/v1", "with a host"),
    ("https://:8000/v1", "with a host"),
    ("https://u:p@h/v1", "without user or password"),
    ("https://@h/v1", "without user or password"),
    ("https://h:0/v1", "port that is not a number"),
    ("https://h:x/v1", "port that is not a number"),
    ("https://h:/v1", "port that is not a number"),
    ("https://h/v1?api-version=1", "no query string"),
    ("https://h/v1#x", "no fragment"),
])
def test_it_says_what_is_wrong_with_a_base_url_without_repeating_it(url, problem):
    found = base_url_problem(url)
    assert found is not None and problem in found
    assert "h/v1" not in found and "u:p" not in found


@pytest.mark.parametrize("url, shown", [
    ("https://user:sk-1@api.example.com:8443/v1/chat/completions?key=sk-1#sk-1",
     "https://api.example.com:8443/v1/chat/completions"),
    ("http://[::1]:8000/v1", "http://[::1]:8000/v1"),
    ("api.example.com/v1?key=sk-1", "(a URL that is not http(s), not shown)"),
    ("user:sk-1@api.example.com", "(a URL that is not http(s), not shown)"),
    ("https://h:port/v1", "(a URL that is not http(s), not shown)"),
    (42, "(a URL that is not http(s), not shown)"),
])
def test_it_shows_a_url_without_user_password_query_or_fragment(url, shown):
    assert shown_url(url) == shown
