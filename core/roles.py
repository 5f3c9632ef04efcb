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
