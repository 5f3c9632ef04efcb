"""The one NinjaAPI: `/api/`, its schema at `/api/openapi.json`, its docs at `/api/docs`.

Every operation needs a signed-in user (a token, or the browser's session with CSRF);
what each may change is checked by role (core/roles.py). Errors are JSON
`{"code", "message", "details"}`, mapped here from the domain's errors.
"""
from django.http import Http404
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, AuthorizationError, HttpError, ValidationError

from core.api_support import AUTH, StrictParser, signed_in
from core.errors import SwitchyardError

api = NinjaAPI(title="Switchyard API", version="1", urls_namespace="api", auth=AUTH, docs_decorator=signed_in,
               parser=StrictParser(),
               description="Agents, blueprints, workflows, executions, schedules, datasets, derive requests, evaluations and tools.")

STATUS_BY_CODE = {
    "NOT_FOUND": 404,
    "FORBIDDEN": 403,
    "UNAUTHENTICATED": 401,
    "CONFLICT": 409,
    "ILLEGAL_TRANSITION": 409,
    "INVALID_DOCUMENT": 422,
    "WORKFLOW_INVALID": 422,
    "VALIDATION_ERROR": 422,
    "PAYLOAD_TOO_LARGE": 413,  # a dataset file over DATASET_MAX_BYTES
    "TOOLS_NOT_IN_CATALOGUE": 422,  # a derive request whose child would get tools no one offers
    "RELEASE_REFUSED": 409,  # a workflow version short of its workflow's release requirement
    "DETAILS_REMOVED": 409,  # a re-run, comparison or trial of a run whose node runs retention removed
}


def error(request, status: int, code: str, message: str, details=None):
    return api.create_response(request, {"code": code, "message": message, "details": details}, status=status)


@api.exception_handler(SwitchyardError)
def domain_error(request, exc: SwitchyardError):
    return error(request, STATUS_BY_CODE.get(exc.code, 400), exc.code, exc.message, exc.details)


@api.exception_handler(ValidationError)
def validation_error(request, exc: ValidationError):
    problems = [{"where": ".".join(str(part) for part in e.get("loc", ())), "message": e.get("msg", "")}
                for e in exc.errors]
    summary = "; ".join(f"{p['where']}: {p['message']}" for p in problems) or "invalid input"
    return error(request, 422, "VALIDATION_ERROR", summary, problems)


@api.exception_handler(AuthenticationError)
def unauthenticated(request, exc):
    return error(request, 401, "UNAUTHENTICATED", "sign in, or send 'Authorization: Bearer <token>'")


@api.exception_handler(AuthorizationError)
def forbidden(request, exc):
    return error(request, 403, "FORBIDDEN", str(exc) or "forbidden")


@api.exception_handler(Http404)
def not_found(request, exc):
    return error(request, 404, "NOT_FOUND", str(exc) or "not found")


@api.exception_handler(HttpError)
def http_error(request, exc: HttpError):
    if isinstance(exc.__cause__, SwitchyardError):  # the parser refused the body: ninja wraps that in a 400
        return domain_error(request, exc.__cause__)
    return error(request, exc.status_code, {400: "BAD_REQUEST", 403: "FORBIDDEN", 404: "NOT_FOUND", 409: "CONFLICT"}.get(exc.status_code, "ERROR"),
                 str(exc))


def _add_routers() -> None:
    from agents.api import router as agents_router
    from core.api import router as core_router
    from core.audit_api import router as audit_router
    from executions.api import router as executions_router
    from experiments.dataset_api import router as experiments_router
    from experiments.evidence_api import router as evidence_router
    from experiments.experiment_api import router as experiment_runs_router
    from quality.api import router as quality_router
    from quality.derive_requests.api import router as derive_requests_router
    from retention.api import router as retention_router
    from schedules.api import router as schedules_router
    from tools.api import router as tools_router
    from triggers.api import router as triggers_router
    from workflows.api import router as workflows_router

    api.add_router("/", core_router)
    api.add_router("/", agents_router)
    api.add_router("/", derive_requests_router)
    api.add_router("/", workflows_router)
    api.add_router("/", executions_router)
    api.add_router("/", experiments_router)
    api.add_router("/", experiment_runs_router)
    api.add_router("/", evidence_router)
    api.add_router("/", quality_router)
    api.add_router("/", retention_router)
    api.add_router("/", tools_router)
    api.add_router("/", schedules_router)
    api.add_router("/", audit_router)
    api.add_router("/", triggers_router)


_add_routers()
