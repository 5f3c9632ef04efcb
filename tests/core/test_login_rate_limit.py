"""Sign-in rate limiting: per user name and per address, on /login/ and /admin/login/,
the same page for existing and unknown accounts, API tokens untouched."""
import pytest
from django.contrib.auth.models import User
from django.test import Client

from core.login_limits import client_address

pytestmark = pytest.mark.django_db

PASSWORD = "a long password"


@pytest.fixture(autouse=True)
def limits(settings):
    assert (settings.LOGIN_FAILURE_LIMIT, settings.LOGIN_COOLOFF_MINUTES) == (5, 15), "the defaults"


@pytest.fixture
def alice():
    return User.objects.create_user(username="alice", password=PASSWORD)


def sign_in(username, password, *, address="192.0.2.10", path="/login/", **extra):
    return Client().post(path, {"username": username, "password": password}, REMOTE_ADDR=address, **extra)


def assert_locked_out(response):
    assert response.status_code == 429
    text = response.content.decode()
    assert "Too many failed sign-in attempts" in text and "Try again in 15 minutes" in text
    assert "sessionid" not in response.cookies


def test_it_locks_an_account_after_five_wrong_passwords_even_for_the_right_one(alice):
    for attempt in range(4):
        assert sign_in("alice", "wrong", address=f"192.0.2.{attempt}").status_code == 200
    sign_in("alice", "wrong", address="192.0.2.4")
    # From yet another address, with the right password: the account itself is locked.
    assert_locked_out(sign_in("alice", PASSWORD, address="198.51.100.7"))


def test_it_answers_an_unknown_user_name_exactly_as_an_existing_one(alice):
    def five_failures_then_one_more(username, address):
        for _ in range(5):
            sign_in(username, "wrong", address=address)
        return sign_in(username, "wrong", address=address)

    existing = five_failures_then_one_more("alice", "192.0.2.1")
    unknown = five_failures_then_one_more("nobody-here", "192.0.2.2")
    assert_locked_out(existing)
    assert_locked_out(unknown)
    assert existing.content == unknown.content
    # And before any lock, a wrong password and an unknown name read the same too.
    User.objects.create_user(username="bob", password=PASSWORD)
    for username, address in (("bob", "192.0.2.3"), ("ghost", "192.0.2.4")):
        response = sign_in(username, "wrong", address=address)
        assert response.status_code == 200 and b"do not match an active account" in response.content


def test_it_locks_an_address_that_tries_many_user_names(alice):
    for index in range(5):
        sign_in(f"guess-{index}", "wrong", address="203.0.113.9")
    assert_locked_out(sign_in("alice", PASSWORD, address="203.0.113.9"))
    # The account itself is not locked: its owner signs in from elsewhere.
    assert sign_in("alice", PASSWORD, address="192.0.2.50").status_code == 302


def test_it_limits_the_admin_sign_in_too(alice):
    User.objects.create_superuser("root", password=PASSWORD)
    for _ in range(5):
        assert sign_in("root", "wrong", path="/admin/login/").status_code in (200, 429)
    response = sign_in("root", PASSWORD, path="/admin/login/", address="198.51.100.8")
    assert_locked_out(response)
    # Failures on either page count for both.
    assert_locked_out(sign_in("root", PASSWORD, address="198.51.100.9"))


def test_it_clears_nothing_on_a_successful_sign_in_under_the_limit(alice):
    User.objects.create_user(username="mallory", password=PASSWORD)
    for _ in range(4):
        sign_in("alice", "wrong")
    # Someone with a valid account signs in from the same address: that must not forgive
    # the four guesses at alice's password, for her account or for the address.
    assert sign_in("mallory", PASSWORD).status_code == 302
    sign_in("alice", "wrong")
    assert_locked_out(sign_in("alice", PASSWORD, address="198.51.100.10"))
    assert_locked_out(sign_in("mallory", PASSWORD))


def test_it_lets_successful_sign_ins_through_however_many(alice):
    for _ in range(20):
        assert sign_in("alice", PASSWORD).status_code == 302


def test_it_leaves_the_api_with_a_token_alone(api):
    for _ in range(5):
        sign_in("viewer-user", "wrong", address="127.0.0.1")
    assert_locked_out(sign_in("viewer-user", PASSWORD, address="127.0.0.1"))
    for _ in range(10):
        assert api.viewer.get("/api/agents").status_code == 200
    bad = Client(HTTP_AUTHORIZATION="Bearer sy_not-a-token")
    for _ in range(10):
        assert bad.get("/api/agents").status_code == 401
    assert api.viewer.get("/api/agents").status_code == 200
    from axes.models import AccessAttempt

    assert sum(attempt.failures_since_start for attempt in AccessAttempt.objects.all()) == 6, \
        "only the sign-in page's failures were counted"


@pytest.mark.parametrize("proxies, forwarded, expected", [
    (0, "203.0.113.5", "192.0.2.1"),  # no proxy configured: the header is ignored
    (1, "198.51.100.1, 203.0.113.5", "203.0.113.5"),  # the entry our proxy appended
    (2, "198.51.100.1, 203.0.113.5, 192.0.2.99", "203.0.113.5"),
    (1, "", "192.0.2.1"),  # not through the proxy: the connection is the client
])
def test_it_reads_the_client_address_from_x_forwarded_for_only_behind_configured_proxies(
        settings, rf, proxies, forwarded, expected):
    settings.TRUSTED_PROXY_COUNT = proxies
    request = rf.post("/login/", REMOTE_ADDR="192.0.2.1", HTTP_X_FORWARDED_FOR=forwarded)
    assert client_address(request) == expected


def test_it_locks_by_the_forwarded_address_behind_a_proxy(settings, alice):
    settings.TRUSTED_PROXY_COUNT = 1
    for index in range(5):
        sign_in(f"guess-{index}", "wrong", address="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert_locked_out(sign_in("alice", PASSWORD, address="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.9"))
    assert sign_in("alice", PASSWORD, address="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.10").status_code == 302
