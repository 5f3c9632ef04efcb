"""API tokens (how programs authenticate; a person creates and revokes their own) and the
audit trail's entries (core/audit.py)."""
from __future__ import annotations

import hashlib
import hmac
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

PREFIX_LENGTH = 8
HEX_DIGITS = "0123456789abcdef"  # what a prefix is made of (secrets.token_hex)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiToken(models.Model):
    """Only the SHA-256 digest of a token is stored; the token itself is shown once, when
    it is created. A token reads `sy_<prefix>_<secret>`; the prefix finds the row."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=PREFIX_LENGTH, unique=True)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.user} / {self.name} ({self.prefix})"

    @classmethod
    def issue(cls, user, name: str) -> tuple[ApiToken, str]:
        """A new token for `user`: the row, and the token to hand over (never stored)."""
        prefix = secrets.token_hex(PREFIX_LENGTH // 2)
        secret = secrets.token_urlsafe(32)
        token = cls.objects.create(user=user, name=name, prefix=prefix, digest=_digest(secret))
        return token, f"sy_{prefix}_{secret}"

    @classmethod
    def authenticate(cls, presented: str):
        """The active user a presented token belongs to, or None."""
        parts = presented.split("_", 2)
        # Only a prefix as issue() makes them reaches the query (PostgreSQL refuses a NUL).
        if (len(parts) != 3 or parts[0] != "sy" or len(parts[1]) != PREFIX_LENGTH
                or not set(parts[1]) <= set(HEX_DIGITS)):
            return None
        token = cls.objects.select_related("user").filter(prefix=parts[1], revoked_at__isnull=True).first()
        if token is None or not hmac.compare_digest(token.digest, _digest(parts[2])) or not token.user.is_active:
            return None
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            cls.objects.filter(pk=token.pk).update(last_used_at=now)  # at most once a minute
        return token.user


class AppendOnly(models.QuerySet):
    """Audit entries are only ever added: a bulk update or delete is refused."""

    def update(self, **kwargs):
        raise PermissionError("audit entries are append-only: they are never changed")

    def delete(self):
        raise PermissionError("audit entries are append-only: they are never deleted")


class AuditEntry(models.Model):
    """One change of consequence (core/audit.py). `actor_id` is the user's id without a
    foreign key, so that removing a person changes no entry; `actor_name` keeps their name."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    actor_name = models.CharField(max_length=150, blank=True)
    via = models.CharField(max_length=20)
    via_detail = models.CharField(max_length=200, blank=True)
    action = models.CharField(max_length=60, db_index=True)
    object_type = models.CharField(max_length=60)
    object_id = models.CharField(max_length=200)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    objects = AppendOnly.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["object_type", "object_id", "-at"], name="audit_object")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or '-'} {self.action} {self.object_type} {self.object_id}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise PermissionError("audit entries are append-only: they are never changed")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise PermissionError("audit entries are append-only: they are never deleted")
