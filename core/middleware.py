from django.contrib.auth.middleware import LoginRequiredMiddleware


class LoginRequired(LoginRequiredMiddleware):
    """Every page needs a signed-in user (anonymous visitors go to the login page). The
    API is left to authenticate each operation itself: it takes tokens as well as the
    session, and answers 401 in JSON rather than redirecting."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
