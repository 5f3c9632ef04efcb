"""Derivation (core-data-structures §6): the creation of the specialised child agent once
a derive request is approved.

Nothing is created until a person approves (`services.derive_request_approve`): the
approval enqueues `agents.derive_child` (`tasks.py`), which creates the child exactly once,
through agents' own import (`agents.services.agent_import_document`), so the child's
lineage and first version are derived as any agent's are.
"""
from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from agents.documents import agent_document
from agents.models import Agent, DeriveRequest, DeriveRequestEvent
from agents.services import agent_import_document
from core.errors import SwitchyardError
from core.status_writes import lock_row
from quality.derive_requests.services import derive_request_event, requested_tools
from tools import catalogue


def child_agent_id(request: DeriveRequest) -> str:
    """An id for the child from its new name (letters, digits, _ . : -), unique."""
    base = re.sub(r"[^A-Za-z0-9_.:\-]+", "_", request.new_name).strip("_.:-")[:90] or request.parent_agent.agent_id[:90]
    candidate, number = base, 1
    while Agent.objects.filter(agent_id=candidate).exists():
        number += 1
        candidate = f"{base}_{number}"
    return candidate


def child_document(request: DeriveRequest) -> dict[str, Any]:
    """The §2.1 document of the specialised child: the parent's, with the specialization
    appended to its prompt_config, capabilities and constraints; of the tools the parent
    lacked, those the tool catalogue holds."""
    parent = request.parent_agent
    document = agent_document(parent)
    for key in ("metadata", "version", "status"):
        document.pop(key)
    prompt = dict(document["prompt_config"] or {})
    capabilities = {key: list(value) for key, value in (document["capabilities"] or {}).items()}
    focus, skills, constraints = request.domain_focus, request.additional_skills, request.additional_constraints
    # Only the missing tools the catalogue holds: a name it does not hold is no tool the
    # child could call (approval refuses such a request; the catalogue may change after).
    tools = [tool for tool in requested_tools(request) if not catalogue.unknown([tool])]
    lines = [f"Specialised from {parent.agent_id} by derive request {request.derive_request_id}."]
    if focus:
        lines.append(f"Domain focus: {focus}.")
    if skills or tools:
        lines.append("Added capabilities: " + ", ".join(skills + tools) + ".")
    lines += [f"Constraint: {constraint}" for constraint in constraints]
    prompt["system_prompt"] = "\n\n".join(part for part in (prompt.get("system_prompt", ""), "\n".join(lines)) if part)
    if constraints:
        prompt["output_constraint"] = "\n".join(
            part for part in (prompt.get("output_constraint", ""), *constraints) if part)

    def extend(key: str, extra: list[str]) -> None:
        capabilities[key] = list(dict.fromkeys([*capabilities.get(key, []), *extra]))

    extend("skills", skills)
    extend("tools", tools)
    if focus:
        extend("knowledge_domains", [focus])
    document.update(
        agent_id=child_agent_id(request), name=request.new_name, prompt_config=prompt, capabilities=capabilities,
        constraints=list(dict.fromkeys([*(document["constraints"] or []), *constraints])),
        lineage={"parent_id": parent.agent_id},
    )
    return document


def derive_request_create_child(*, request_pk: int) -> Agent | None:
    """Create the child agent of an approved request, once: the request row is locked and
    a request that has its child already keeps it (a task delivered twice creates one).
    A request that is not approved creates nothing. A failure is recorded on the request."""
    try:
        with transaction.atomic():
            request = lock_row(DeriveRequest, request_pk, missing_ok=True)
            if request is None or request.status != DeriveRequest.Status.APPROVED:
                return None
            if request.result_agent_id:
                return request.result_agent
            actor = request.decided_by.get_username() if request.decided_by is not None else "switchyard"
            child, _ = agent_import_document(child_document(request), actor=actor)
            request.result_agent, request.result_error = child, ""
            request.save(update_fields=["result_agent", "result_error"])
            derive_request_event(request, DeriveRequestEvent.Kind.CHILD_CREATED, actor=actor,
                                 comment=f"created agent {child.agent_id} at level {child.level}")
            return child
    except SwitchyardError as error:
        with transaction.atomic():
            request = lock_row(DeriveRequest, request_pk)
            if request.result_agent_id is None:
                request.result_error = str(error)
                request.save(update_fields=["result_error"])
                derive_request_event(request, DeriveRequestEvent.Kind.CHILD_FAILED, actor="switchyard",
                                     comment=str(error))
        raise


# An approval whose task was lost (a Redis restart empties the queue) is sent again for this
# long after the decision; a creation that failed is recorded on the request and not retried.
CHILD_RESEND_WINDOW = timedelta(hours=1)


def derive_requests_awaiting_child(*, now=None) -> list[int]:
    """Approved requests that have neither a child nor a recorded failure NODE_STALE_SECONDS
    after their approval: their `agents.derive_child` message was lost. Each is named at
    most once per that many seconds, so the sweep does not flood a queue no worker reads."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.NODE_STALE_SECONDS)
    waiting = DeriveRequest.objects.filter(
        status=DeriveRequest.Status.APPROVED, result_agent__isnull=True, result_error="",
        decided_at__lt=stale, decided_at__gte=now - CHILD_RESEND_WINDOW)
    return [pk for pk in waiting.values_list("pk", flat=True)[:100]
            if cache.add(f"derive-child-sent:{settings.CELERY_TASK_DEFAULT_QUEUE}:{pk}", 1,
                         timeout=settings.NODE_STALE_SECONDS)]
