"""The webhook's door: `POST /hooks/<hook_id>`, outside sign-in and CSRF (a program posts
here, proving itself by the signature alone), answered in the API's JSON error shape."""
from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from core.errors import SwitchyardError
from triggers import services
from triggers.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER

STATUS_BY_CODE = {"NOT_FOUND": 404, "UNAUTHENTICATED": 401, "PAYLOAD_TOO_LARGE": 413, "INVALID_DOCUMENT": 422,
                  "WORKFLOW_INVALID": 422}


@csrf_exempt
@login_not_required
@require_POST
def receive(request: HttpRequest, hook_id: str) -> JsonResponse:
    """Start a run from a signed POST: 202 with the run's id and addresses (the same run, 202
    again, for a repeated Idempotency-Key); 404, 413, 401 or 422 and nothing started."""
    try:
        webhook = services.webhook_get(hook_id)
        services.check_body_size(webhook, _declared_length(request))  # before the body is read
        started = services.webhook_receive(
            webhook=webhook, body=request.body, timestamp=request.headers.get(TIMESTAMP_HEADER),
            signed=request.headers.get(SIGNATURE_HEADER), idempotency_key=request.headers.get("Idempotency-Key"))
    except SwitchyardError as refused:
        return _refusal(refused)
    execution = started.execution
    return JsonResponse({
        "execution_id": execution.execution_id, "status": execution.status, "repeated": started.repeated,
        "url": request.build_absolute_uri(reverse("executions:detail", args=[execution.execution_id])),
        "api_url": request.build_absolute_uri(f"/api/executions/{execution.execution_id}"),
    }, status=202)


def _declared_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _refusal(refused: SwitchyardError) -> JsonResponse:
    response = JsonResponse(refused.as_dict(), status=STATUS_BY_CODE.get(refused.code, 400))
    response["Cache-Control"] = "no-store"
    return response
