from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.http import HttpResponse, JsonResponse
from django.utils.html import escape


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
    failed with a server error; no stored value holds one, so nothing is lost. The API
    checks each parameter itself and names it (422)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path_info.startswith("/api/") or not any(
                "\x00" in key or "\x00" in value for key, values in request.GET.lists() for value in values):
            return self.get_response(request)
        return HttpResponse("<!doctype html><title>Bad request</title><h1>Bad request (400)</h1>"
                            "<p>The address contains a NUL character (%00), which no filter can match.</p>", status=400)
