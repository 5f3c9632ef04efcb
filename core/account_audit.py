"""Who may do what, on the audit trail: users and their roles (their groups, and superuser),
whichever way they change.

The API and the admin site change a user as one step, inside `one_entry()`, and record that
step once themselves, with the fields before and after (the API's `user.roles`, the admin's
`user.change`). Any other change — a user made by `ensure_admin` or `createsuperuser`, groups
given in a shell or a command — is caught here by the model's signals, one entry per change,
with no actor (the source says which command)."""
from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models.signals import m2m_changed, post_save

from core.audit import record

_recorded_by_caller: contextvars.ContextVar[bool] = contextvars.ContextVar("account_audit_by_caller", default=False)


@contextmanager
def one_entry() -> Iterator[None]:
    """Changes to users inside are recorded by the caller, as one entry: the signals keep quiet."""
    token = _recorded_by_caller.set(True)
    try:
        yield
    finally:
        _recorded_by_caller.reset(token)


def group_names(user) -> list[str]:
    return sorted(user.groups.values_list("name", flat=True))


def _users_of(instance, reverse: bool, pk_set) -> list:
    """The users an m2m change of User.groups touches: the user itself, or (from a group's
    side) the users named, or every member when the group is cleared."""
    if not reverse:
        return [instance]
    users = get_user_model().objects
    return list(users.filter(pk__in=pk_set) if pk_set is not None else instance.user_set.all())


def _groups_changing(sender, instance, action: str, reverse: bool, pk_set, **kwargs: Any) -> None:
    """Before an m2m change of a user's groups, keep each user's groups; after it, record
    those whose groups changed."""
    if _recorded_by_caller.get():
        return
    if action.startswith("pre_"):
        instance._audit_groups_before = {user.pk: (user, group_names(user)) for user in _users_of(instance, reverse, pk_set)}
        return
    for user, before in getattr(instance, "_audit_groups_before", {}).values():
        after = group_names(user)
        if after != before:
            record("user.roles", object_type="user", object_id=user.get_username(), before={"groups": before},
                   after={"groups": after})
    instance._audit_groups_before = {}


def _user_created(sender, instance, created: bool, raw: bool = False, **kwargs: Any) -> None:
    if created and not raw and not _recorded_by_caller.get():
        record("user.create", object_type="user", object_id=instance.get_username(),
               after={"username": instance.get_username(), "is_superuser": instance.is_superuser,
                      "is_staff": instance.is_staff, "is_active": instance.is_active})


def connect() -> None:
    """Listen to the user model (from CoreConfig.ready())."""
    user_model = get_user_model()
    m2m_changed.connect(_groups_changing, sender=user_model.groups.through, dispatch_uid="audit_user_groups")
    post_save.connect(_user_created, sender=user_model, dispatch_uid="audit_user_created")
