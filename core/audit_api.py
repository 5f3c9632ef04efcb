"""`GET /api/audit`: the audit trail, for admins. Read only: no operation changes an entry."""
from ninja import Query, Router
from ninja.pagination import paginate

from core.api_support import Page, Rendered, responses
from core.audit_selectors import AuditFilters, audit_entries, entry_out
from core.roles import ADMIN, require_role
from core.schemas import AuditEntryOut, AuditFiltersIn

router = Router(tags=["audit"])


@router.get("/audit", response=responses(200, list[AuditEntryOut]),
            summary="The audit trail, newest first, filtered (admins)")
@paginate(Page)
def audit_list(request, filters: AuditFiltersIn = Query(...)):
    require_role(request.user, ADMIN, to="read the audit trail")
    entries = audit_entries(AuditFilters.parse(filters.dict()))
    return Rendered(entries, lambda rows: [entry_out(entry) for entry in rows])
