"""The signed-in user, their API tokens, users and roles (admins), backends (admins)."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.shortcuts import get_object_or_404
from ninja import Router, Status
from ninja.pagination import paginate

from core import token_services
from core.account_audit import one_entry
from core.api_support import Page, responses
from core.audit import record
from core.backend_urls import shown_url
from core.errors import DocumentError, SwitchyardError
from core.models import ApiToken
from core.roles import ADMIN, GROUPS, require_role, roles_of
from core.schemas import BackendOut, MeOut, RolesIn, TokenCreatedOut, TokenIn, TokenOut, UserIn, UserOut

router = Router(tags=["account"])


@router.get("/me", response=responses(200, MeOut), summary="Who am I, and what may I do")
def me(request):
    return {"username": request.user.get_username(), "roles": roles_of(request.user)}


@router.get("/tokens", response=responses(200, list[TokenOut]), summary="My API tokens")
@paginate(Page)
def tokens_list(request):
    return ApiToken.objects.filter(user=request.user)


@router.post("/tokens", response=responses(201, TokenCreatedOut), summary="Create an API token (shown once)")
def tokens_create(request, payload: TokenIn):
    with transaction.atomic():
        token, secret = ApiToken.issue(request.user, payload.name)
        record("token.create", actor=request.user, object_type="token", object_id=token.prefix,
               after={"name": token.name, "user": request.user.get_username()})
    return Status(201, {**TokenOut.from_orm(token).dict(), "token": secret})


@router.delete("/tokens/{token_id}", response=responses(200, TokenOut), summary="Revoke one of my API tokens")
def tokens_revoke(request, token_id: int):
    token = get_object_or_404(ApiToken, pk=token_id, user=request.user)
    token_services.tokens_revoke(ApiToken.objects.filter(pk=token.pk), actor=request.user)
    token.refresh_from_db()
    return token


def _user_out(user) -> dict:
    return {"id": user.pk, "username": user.username, "is_active": user.is_active, "roles": roles_of(user)}


def _set_roles(user, roles: list[str]) -> None:
    unknown = sorted(set(roles) - set(GROUPS) - {"viewer"})
    if unknown:
        raise DocumentError(f"unknown roles {unknown}; roles are viewer, {', '.join(GROUPS)}", where="roles")
    with one_entry():  # the caller records the change once
        user.groups.set(Group.objects.filter(name__in=roles))


@router.get("/users", response=responses(200, list[UserOut]), summary="Users and their roles (admins)")
@paginate(Page)
def users_list(request):
    require_role(request.user, ADMIN, to="list users")
    return [_user_out(user) for user in get_user_model().objects.order_by("username").prefetch_related("groups")]


def _check_password(username: str, password: str) -> None:
    """The password validators of the settings (length, common, numeric, like the username)."""
    try:
        validate_password(password, get_user_model()(username=username))
    except ValidationError as error:
        raise SwitchyardError(f"password: {' '.join(error.messages)}", code="VALIDATION_ERROR",
                              details=[{"where": "password", "message": message} for message in error.messages]) from None


@router.post("/users", response=responses(201, UserOut), summary="Create a user (admins)")
def users_create(request, payload: UserIn):
    require_role(request.user, ADMIN, to="create users")
    _check_password(payload.username, payload.password)
    try:
        with transaction.atomic(), one_entry():
            user = get_user_model().objects.create_user(username=payload.username, password=payload.password)
            _set_roles(user, payload.roles)
            record("user.create", actor=request.user, object_type="user", object_id=user.username,
                   after={"username": user.username, "roles": roles_of(user)})
    except IntegrityError:
        raise SwitchyardError(f"a user named '{payload.username}' exists already", code="CONFLICT") from None
    return Status(201, _user_out(user))


@router.put("/users/{user_id}/roles", response=responses(200, UserOut), summary="Set a user's roles (admins)")
def users_set_roles(request, user_id: int, payload: RolesIn):
    require_role(request.user, ADMIN, to="change roles")
    with transaction.atomic():
        user = get_object_or_404(get_user_model(), pk=user_id)
        before = roles_of(user)
        _set_roles(user, payload.roles)
        after = roles_of(user)
        if after != before:
            record("user.roles", actor=request.user, object_type="user", object_id=user.username,
                   before={"roles": before}, after={"roles": after})
    return _user_out(user)


@router.get("/backends", response=responses(200, list[BackendOut]), summary="The LLM backends operators configured (admins)")
def backends_list(request):
    require_role(request.user, ADMIN, to="see backends")
    return [{"name": name, "kind": config["kind"], "model": config.get("model", ""),
             "base_url": shown_url(config["base_url"]) if config.get("base_url") else "",
             "timeout_seconds": config.get("timeout_seconds")}
            for name, config in settings.LLM_BACKENDS.items()]
