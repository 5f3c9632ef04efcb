from core.roles import roles_of


def roles(request):
    """`roles` (a list) and `can` (role → bool) for templates: which buttons exist."""
    held = getattr(request, "roles_held", None) or roles_of(getattr(request, "user", None))  # a view may have read them
    return {"roles": held, "can": {role: role in held for role in ("viewer", "author", "approver", "admin")}}
