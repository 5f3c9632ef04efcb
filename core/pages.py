"""What the server-rendered pages share."""
from __future__ import annotations

from django.core.paginator import Paginator
from django.http import QueryDict

PER_PAGE = 50


def paginate(request, rows, per_page: int = PER_PAGE) -> dict:
    """`page` (a Django Page, numbers past the end give the last page) and `query`, the
    request's other parameters to carry into the pager's links."""
    page = Paginator(rows, per_page).get_page(request.GET.get("page"))
    query = QueryDict(mutable=True)
    query.update({key: value for key, value in request.GET.items() if key != "page" and value})
    encoded = query.urlencode()
    return {"page": page, "query": f"{encoded}&" if encoded else ""}
