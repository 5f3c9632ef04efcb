from core.roles import roles_of


def roles(request):
    """`roles` (a list) and `can` (role → bool) for templates: which buttons exist."""
    held = roles_of(getattr(request, "user", None))
    return {"roles": held, "can": {role: role in held for role in ("viewer", "author", "approver", "admin")}}
