"""Sign-in rate limiting around django-axes: whose address a request comes from, and the
page a locked-out sign-in gets. Axes counts failed sign-ins per user name and per address
(see LOGIN_FAILURE_LIMIT in the settings); API tokens are not sign-ins and never counted."""
from django.conf import settings
from django.shortcuts import render


def client_address(request) -> str | None:
    """The address failures are counted against. Behind TRUSTED_PROXY_COUNT proxies, each
    appending the address it saw to X-Forwarded-For, the client is that many entries from
    the right: entries further left are whatever the client wrote, so they are never
    trusted. Without proxies (the default) the header is ignored."""
    proxies = settings.TRUSTED_PROXY_COUNT
    remote = request.META.get("REMOTE_ADDR")
    if proxies <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if len(forwarded) < proxies:  # not through all the proxies: the connection is the client
        return remote
    return forwarded[-proxies]


def locked_out(request, original_response=None, credentials=None):
    """The same page and status for every locked-out sign-in, whether the user name exists
    or not, so that the lockout tells nothing about which accounts there are."""
    return render(request, "registration/locked_out.html", {"minutes": settings.LOGIN_COOLOFF_MINUTES}, status=429)
