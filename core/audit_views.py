"""The audit trail's page, `/audit/`: admins only."""
from __future__ import annotations

from django.shortcuts import render
from django.urls import NoReverseMatch, reverse

from core.audit_selectors import FILTERS, AuditFilters, BadFilter, audit_entries, diff
from core.models import AuditEntry
from core.pages import paginate
from core.roles import ADMIN, has_role, roles_of

# The page of each kind of object the trail names, by its URL's name (taking the object's id).
OBJECT_PAGES = {
    "agent": "agents:detail",
    "blueprint": "blueprints:detail",
    "workflow": "workflows:detail",
    "execution": "executions:detail",
    "derive_request": "derive_requests:detail",
    "evaluation": "evaluations:detail",
    "dataset": "datasets:detail",
}


def object_page(object_type: str, object_id: str) -> str:
    """The address of the object's page, or "" where it has none (a user, a token)."""
    name = OBJECT_PAGES.get(object_type)
    if not name:
        return ""
    try:
        return reverse(name, args=[object_id])
    except NoReverseMatch:  # an id the page's address cannot hold
        return ""


def audit_page(request):
    if not has_role(request.user, ADMIN):
        return render(request, "core/audit_forbidden.html", {"roles": roles_of(request.user)}, status=403)
    given = {name: request.GET.get(name, "").strip() for name in FILTERS}
    problem = ""
    try:
        entries = audit_entries(AuditFilters.parse(given))
    except BadFilter as refused:
        problem, entries = refused.message, AuditEntry.objects.none()
    paged = paginate(request, entries)
    rows = [{"entry": entry, "link": object_page(entry.object_type, entry.object_id),
             "changes": diff(entry.before, entry.after)} for entry in paged["page"]]
    actions = AuditEntry.objects.order_by("action").values_list("action", flat=True).distinct()
    return render(request, "core/audit.html", {
        **paged, "rows": rows, "filters": given, "problem": problem, "actions": list(actions),
        "filtered": any(given.values()),
    }, status=400 if problem else 200)
