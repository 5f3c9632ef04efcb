"""Writes for API tokens beyond their issue (`ApiToken.issue`): revoking them."""
from __future__ import annotations

from django.db import models, transaction
from django.utils import timezone

from core.audit import record
from core.models import ApiToken


@transaction.atomic
def tokens_revoke(tokens: models.QuerySet[ApiToken], *, actor) -> int:
    """Revoke those of `tokens` not revoked yet, each with its entry on the audit trail (each
    by one conditional UPDATE, so a token revoked twice at once is recorded once). Returns
    how many were revoked."""
    revoked = 0
    for token in tokens.filter(revoked_at__isnull=True).select_related("user"):
        now = timezone.now()
        if ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=now):
            record("token.revoke", actor=actor, object_type="token", object_id=token.prefix,
                   before={"name": token.name, "user": token.user.get_username(), "revoked_at": None},
                   after={"revoked_at": now})
            revoked += 1
    return revoked
