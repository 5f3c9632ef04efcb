"""Roles: what a signed-in person may do.

- viewer: read everything (every signed-in, active user);
- author: create and edit agents, blueprints and workflows; start and steer runs;
- approver: approve or reject derive requests;
- admin: all of the above, and users, roles and backends (superusers are admins).

Roles other than viewer are Django groups of the same names (created by a migration), so
the admin site can assign them too.
"""
from __future__ import annotations

from core.errors import SwitchyardError

VIEWER, AUTHOR, APPROVER, ADMIN = "viewer", "author", "approver", "admin"
GROUPS = (AUTHOR, APPROVER, ADMIN)
ROLES = (VIEWER, *GROUPS)


class Forbidden(SwitchyardError):
    code = "FORBIDDEN"


def roles_of(user) -> list[str]:
    """The roles a user holds, viewer first."""
    if not (user and user.is_authenticated and user.is_active):
        return []
    if user.is_superuser:
        return list(ROLES)
    names = set(user.groups.values_list("name", flat=True))
    if ADMIN in names:
        return list(ROLES)
    return [VIEWER, *(role for role in GROUPS if role in names)]


def has_role(user, role: str) -> bool:
    return role in roles_of(user)


def require_role(user, role: str, *, to: str) -> None:
    """Raise Forbidden unless `user` holds `role`; `to` says what they tried, for the message."""
    if not has_role(user, role):
        raise Forbidden(f"only a user with the {role} role may {to}", details={"required_role": role})


def holders(role: str, *, limit: int = 5) -> list[str]:
    """The usernames of up to `limit` active users who hold `role` (admins and superusers hold
    every role), alphabetically: whom to ask for what only they may do."""
    from django.contrib.auth.models import User
    from django.db.models import Q

    held = Q(is_superuser=True) | Q(groups__name__in=[role, ADMIN])
    return list(User.objects.filter(held, is_active=True).order_by("username")
                .values_list("username", flat=True).distinct()[:limit])


def steering_refusal(user, roles: list[str], *, who: list[str]) -> str:
    """Why `user` (holding `roles`) sees no resume, retry or abort on an escalated run, naming who may."""
    ask = f" Ask {', '.join(who)}." if who else " No one holds the author role yet: an admin can give it."
    return f"Only authors can resume, retry or abort a run; you are signed in as {user.get_username()} " \
           f"({', '.join(roles) or 'no role'}).{ask}"
