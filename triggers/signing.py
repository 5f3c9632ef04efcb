"""Secrets and signatures: how a webhook's body is proved to come from who holds its
secret, and how a callback proves it comes from here.

A signature is `sha256=<hex>`, the HMAC-SHA256 of `<timestamp>.<body>` under the secret,
sent with the timestamp (unix seconds) in `X-Switchyard-Timestamp`: a body signed once
cannot be sent again outside the replay window.

Checking an HMAC needs the secret itself, so a webhook's signing secret (and a workflow
key's callback secret) cannot be kept as a digest as tokens are: it is kept sealed
(Fernet: AES-128-CBC with an HMAC) under a key derived from SECRET_KEY. A copy of the
database alone gives no secret; rotating SECRET_KEY keeps the old key in
SECRET_KEY_FALLBACKS until every secret sealed under it is replaced.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.utils.crypto import salted_hmac

SIGNATURE_HEADER = "X-Switchyard-Signature"
TIMESTAMP_HEADER = "X-Switchyard-Timestamp"
_SEAL_SALT = "switchyard.triggers.sealed-secret"


def new_secret(kind: str) -> str:
    """A fresh secret, e.g. `whsec_…` for a webhook's signing secret."""
    return f"{kind}_{secrets.token_urlsafe(32)}"


def _fernet() -> MultiFernet:
    keys = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return MultiFernet([Fernet(base64.urlsafe_b64encode(salted_hmac(_SEAL_SALT, "", secret=key,
                                                                      algorithm="sha256").digest()))
                        for key in keys])


def seal(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


def unseal(sealed: str) -> str:
    """The secret; ValueError when no key (SECRET_KEY or a fallback) opens it."""
    try:
        return _fernet().decrypt(sealed.encode()).decode()
    except InvalidToken:
        raise ValueError("the secret was sealed under a SECRET_KEY this server no longer has") from None


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The value of the signature header for `body` sent at `timestamp`."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def signature_problem(secret: str, *, timestamp: str | None, signed: str | None, body: bytes, now: float,
                      window: float) -> str | None:
    """Why a request's signature does not hold, or None when it does: a header missing, a
    timestamp that is not unix seconds or is outside `window` seconds of `now`, or a
    signature that is not the body's."""
    if not timestamp:
        return f"the {TIMESTAMP_HEADER} header is missing"
    if not signed:
        return f"the {SIGNATURE_HEADER} header is missing"
    if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
        return f"{TIMESTAMP_HEADER} is not unix seconds"
    if abs(now - int(timestamp)) > window:
        return f"{TIMESTAMP_HEADER} is more than {window:g} seconds from this server's time: a replay, or a clock off"
    if not hmac.compare_digest(signed.encode(), signature(secret, timestamp, body).encode()):
        return f"{SIGNATURE_HEADER} is not the HMAC-SHA256 of '<timestamp>.<body>' under the trigger's secret"
    return None


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
