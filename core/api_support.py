"""What every API router shares: authentication, how requests are read, the error shape,
pagination.

Routers declare `responses(200, SomeOut)` so that every status an operation can answer
with is in the OpenAPI schema; errors are always `{"code", "message", "details"}`.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest
from ninja import Field, Schema
from ninja.errors import AuthorizationError, ValidationError
from ninja.pagination import PaginationBase
from ninja.parser import Parser
from ninja.security import APIKeyCookie, HttpBearer

from core.audit import set_via
from core.errors import DocumentError
from core.jsonutil import check_storable
from core.models import ApiToken


def _bearer_token(request) -> str | None:
    """The token of an `Authorization: Bearer …` header ("" when it names none), else None."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token if scheme.lower() == "bearer" else None


# Keys good for some operations only (a workflow key: its workflow's runs), which apps above
# core register: each function answers what a live key of its kind is ("workflow key
# 'ci'", and where it is good), or None for anything else.
_scoped_keys: list[Callable[[str], str | None]] = []


def register_scoped_key(describe: Callable[[str], str | None]) -> None:
    """Teach the API's authentication a kind of key that every operation but its own refuses
    with 403 (rather than 401, as if it were not a key at all); its operations take it with an
    authenticator of their own placed before AUTH."""
    if describe not in _scoped_keys:
        _scoped_keys.append(describe)


class TokenAuth(HttpBearer):
    """`Authorization: Bearer sy_…` — for programs. A live scoped key (a workflow key) is
    refused here with 403, naming what it is good for: it is not a person's token."""

    def authenticate(self, request, token: str):
        user = ApiToken.authenticate(token)
        if user is not None:
            request.user = user
            set_via("api_token", token.split("_")[1])
            return user
        for describe in _scoped_keys:
            scope = describe(token)
            if scope:
                raise AuthorizationError(message=f"this is {scope}; it may do nothing else")
        return None


class SessionAuth(APIKeyCookie):
    """Django's session cookie — for the browser; unsafe methods need the CSRF token.

    A request that carries a Bearer token is judged by the token alone: the CSRF check
    would otherwise run first and answer a program's bad or revoked token with 403
    "CSRF check failed" instead of 401. (A cross-site page cannot set that header, so
    no CSRF protection is lost.)"""

    param_name = "sessionid"

    def __call__(self, request):
        if _bearer_token(request) is not None:
            return None
        return super().__call__(request)

    def authenticate(self, request, key):
        return request.user if request.user.is_authenticated and request.user.is_active else None


AUTH = [TokenAuth(), SessionAuth(csrf=True)]


def signed_in(view):
    """For the schema and the docs page: a valid token, or else a signed-in session; the
    login page otherwise. As for the operations, a token sent is judged alone."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        token = _bearer_token(request)
        if token is not None:
            user = ApiToken.authenticate(token)
            if user is None:
                return redirect_to_login(request.get_full_path())
            request.user = user
        elif not (request.user.is_authenticated and request.user.is_active):
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapper


class StrictParser(Parser):
    """How every operation reads its request: what neither database can hold or JSON cannot
    say is refused (422, naming where) before any field is read, so that no operation has to
    remember it and a filter never sends the database what it refuses.

    A body is checked whole as every write checks what it stores (`check_storable`: NUL
    characters, lone surrogates, NaN and Infinity, nesting beyond MAX_NESTING); a query
    string's names and values may not hold a NUL character (%00). Text that is not JSON at
    all stays ninja's 400."""

    def parse_body(self, request):
        body = json.loads(request.body)
        check_storable(body)  # ninja answers what this raises as a 400: the API's handler unwraps it
        return body

    def parse_querydict(self, data, list_fields, request):
        place = "query" if data is request.GET else "form"

        def refuse_unstorable(text: str, *where: str) -> None:  # as a field's own check would: VALIDATION_ERROR
            try:
                check_storable(text)
            except DocumentError as refused:
                raise ValidationError([{"loc": (place, *where), "msg": refused.problem}]) from None

        for key, values in data.lists():
            refuse_unstorable(key)  # before it names a place
            for value in values:
                if isinstance(value, str):  # not an uploaded file
                    refuse_unstorable(value, key)
        return super().parse_querydict(data, list_fields, request)


class ErrorOut(Schema):
    code: str = Field(..., description="stable error code, e.g. NOT_FOUND, FORBIDDEN, INVALID_DOCUMENT")
    message: str
    details: Any = None


ERROR_STATUSES = (400, 401, 403, 404, 409, 413, 422)


def responses(status: int, schema: Any) -> dict[int, Any]:
    """An operation's response declaration: its success and every error status."""
    return {status: schema, **{code: ErrorOut for code in ERROR_STATUSES}}


class Rendered:
    """A queryset whose rows are rendered a page at a time: what `Page` slices and counts
    (in SQL). `render` takes the page's rows and gives their JSON forms, so that it can read
    what the page needs in one more query rather than one per row. A list (of ids chosen in
    Python) is sliced and counted the same way."""

    def __init__(self, queryset, render: Callable[[list], list]):
        self.queryset = queryset
        self.render = render

    def count(self) -> int:
        return len(self.queryset) if isinstance(self.queryset, list) else self.queryset.count()

    def __getitem__(self, window: slice) -> list:
        return self.render(list(self.queryset[window]))


class Page(PaginationBase):
    """`?limit=&offset=` on every list; answers `{"items", "count", "limit", "offset"}`."""

    class Input(Schema):
        limit: int = Field(50, ge=1, le=500)
        offset: int = Field(0, ge=0, le=2**31 - 1)

    class Output(Schema):
        items: list[Any]
        count: int
        limit: int
        offset: int

    items_attribute = "items"

    def paginate_queryset(self, queryset: Any, pagination: Input, request: HttpRequest, **params: Any) -> dict[str, Any]:
        window = queryset[pagination.offset:pagination.offset + pagination.limit]
        count = queryset.count() if hasattr(queryset, "count") and not isinstance(queryset, list) else len(queryset)
        return {"items": list(window), "count": count, "limit": pagination.limit, "offset": pagination.offset}
