from http import HTTPStatus

from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.http import HttpResponse, JsonResponse
from django.utils.cache import add_never_cache_headers
from django.utils.html import escape

from core.audit import acting


class LoginRequired(LoginRequiredMiddleware):
    """Every page needs a signed-in user (anonymous visitors go to the login page). The
    API is left to authenticate each operation itself: it takes tokens as well as the
    session, and answers 401 in JSON rather than redirecting."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class PayloadTooLarge:
    """A body over DATA_UPLOAD_MAX_MEMORY_SIZE answers 413 before anything reads it.

    Django raises RequestDataTooBig where the body is first read (the CSRF check, a form,
    the API's parser), which became a 400 page or the debug page's traceback. The API
    answers in its JSON error shape, the pages with a short page. Multipart bodies are
    left to Django: their files do not count against the limit."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if limit is None or length <= limit or request.content_type == "multipart/form-data":
            return self.get_response(request)
        message = f"the request body is {length} bytes; the limit is {limit} bytes"
        if request.path_info.startswith("/api/"):
            return JsonResponse({"code": "PAYLOAD_TOO_LARGE", "message": message, "details": {"limit_bytes": limit}},
                                status=413)
        return HttpResponse(f"<!doctype html><title>Request too large</title><h1>Request too large (413)</h1>"
                            f"<p>{escape(message)}.</p>", status=413)


class NulInPageQuery:
    """A page's query string with a NUL character (%00) answers 400.

    PostgreSQL refuses NUL in any text it is sent, so a page filtering on such a value
    failed with a server error; no stored value holds one, so nothing is lost. The API's
    parser refuses it naming the parameter (422)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path_info.startswith("/api/") or not any(
                "\x00" in key or "\x00" in value for key, values in request.GET.lists() for value in values):
            return self.get_response(request)
        return HttpResponse("<!doctype html><title>Bad request</title><h1>Bad request (400)</h1>"
                            "<p>The address contains a NUL character (%00), which no filter can match.</p>", status=400)


class ApiAnswers:
    """Every answer under /api/ is the API's: never kept by a cache, and an error is always
    its JSON `{"code", "message", "details"}`.

    The operations answer their own errors in JSON, but some answers come from outside
    them: a path no operation has (Django's 404 page), a method an operation does not take
    (ninja's plain-text 405), a failure nothing handled (the 500 page). A program would get
    HTML where it reads JSON; those become the JSON shape here, with their status. Answers
    hold run data (inputs, outputs, decisions), so no browser or proxy may store them."""

    CODES = {400: "BAD_REQUEST", 401: "UNAUTHENTICATED", 403: "FORBIDDEN", 404: "NOT_FOUND",
             405: "METHOD_NOT_ALLOWED", 413: "PAYLOAD_TOO_LARGE", 500: "SERVER_ERROR"}

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not request.path_info.startswith("/api/"):
            return response
        if response.status_code >= 400 and not response.get("Content-Type", "").startswith("application/json"):
            response = self.json_error(request, response)
        add_never_cache_headers(response)
        return response

    def json_error(self, request, response) -> JsonResponse:
        status = response.status_code
        if status == 404:
            message = "no API operation answers at this address (the operations: /api/docs)"
        elif status == 405:
            message = f"{request.method} is not an operation here; the methods here: {response.get('Allow', 'none')}"
        else:
            try:
                message = HTTPStatus(status).phrase.lower()  # e.g. "internal server error"
            except ValueError:
                message = "error"
        answer = JsonResponse({"code": self.CODES.get(status, "ERROR"), "message": message, "details": None},
                              status=status)
        if response.has_header("Allow"):
            answer["Allow"] = response["Allow"]
        return answer


class AuditSource:
    """What a request changes is on the audit trail as coming from a page (or the API
    through the session) and the address it came from; an API token, when the API takes
    one, says so itself (core.api_support.TokenAuth)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with acting("page", request.META.get("REMOTE_ADDR") or ""):
            return self.get_response(request)
