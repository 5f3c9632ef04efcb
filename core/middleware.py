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
