"""Writes for agents (derive requests' are in `quality/derive_requests/services.py`).

Three invariants live here and nowhere else:
- lineage: `root` and `level` follow from `parent` (root agents are their own root, at
  level 0), for the agent and its whole subtree, and a parent can never be a descendant;
- versions: an agent version is immutable; a change to what the agent is (prompt,
  capabilities, constraints, runtime, limits) creates a new version;
- derivation: a child agent (one with a parent) comes from an approved derive request
  (`quality/derive_requests/child_agent.py` imports it) or from an admin, so approving a
  derivation is not a step anyone can go around.
"""
from __future__ import annotations

import re
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from agents.agent_tools import approval_problems, unknown_tool_problems
from agents.catalogue import model_entry
from agents.documents import CONTEXT_LIMIT_FIELDS, RUNTIME_FIELDS, agent_as_of, versioned_content
from agents.models import Agent, AgentVersion
from agents.schemas import AgentDocument
from core.audit import changes, record
from core.errors import DocumentError, IllegalTransition, SwitchyardError, echo
from core.jsonutil import check_shape, check_storable, parse_datetime
from core.roles import ADMIN, require_role
from core.status_writes import change_status, lock_row
from engine.tokens import UnknownEncoding, check_encoding

DEFAULT_VERSION = "1.0.0"


def get_agent(agent_id: str, *, where: str) -> Agent:
    try:
        return Agent.objects.get(agent_id=agent_id)
    except Agent.DoesNotExist:
        raise DocumentError(f"agent '{agent_id}' does not exist", where=where) from None


def next_version(current: str, taken: set[str]) -> str:
    """1.0.0 → 1.0.1; a version without a trailing number gets '.1' appended."""
    candidate = current
    while candidate in taken:
        match = re.search(r"(\d+)$", candidate)
        candidate = f"{candidate[: match.start()]}{int(match.group(1)) + 1}" if match else f"{candidate}.1"
    return candidate


def _runtime_and_limits(document: dict[str, Any]) -> dict[str, Any]:
    """Model field values for the runtime and context limits, checking the derived ones."""
    defaults = {field.name: field.get_default() for field in Agent._meta.fields if field.name in CONTEXT_LIMIT_FIELDS + RUNTIME_FIELDS}
    values = dict(defaults, data_area=None)
    runtime = document.get("runtime", {})
    limits = document.get("context_limits", {})
    values.update({key: runtime[key] for key in RUNTIME_FIELDS if key in runtime})
    values.update({key: limits[key] for key in CONTEXT_LIMIT_FIELDS + ("data_area",) if key in limits})
    for key in ("max_input_tokens", "max_output_tokens", "reserved_for_system_prompt", "reserved_for_instructions",
                "data_area", "max_tool_calls"):
        if isinstance(values[key], float):  # JSON does not tell 5 from 5.0: the shape let a whole number through
            values[key] = int(values[key])

    if values["backend"] not in settings.LLM_BACKENDS:
        known = ", ".join(sorted(settings.LLM_BACKENDS))
        raise DocumentError(f"backend '{values['backend']}' is not configured (configured: {known})", where="runtime.backend")
    problems = approval_problems(document.get("capabilities", {}).get("tools", []), values["tools_needing_approval"])
    if problems:
        raise DocumentError.at_fields(problems)
    values["limit_sources"] = _model_limits(values, limits)
    values["limit_sources"]["encoding"] = _model_encoding(values, runtime)
    reserved = values["reserved_for_system_prompt"] + values["reserved_for_instructions"]
    if reserved >= values["max_input_tokens"]:
        raise DocumentError(
            f"reserved tokens ({reserved}) leave nothing of max_input_tokens ({values['max_input_tokens']}) for data",
            where="context_limits",
        )
    # available_for_data and effective_data_limit are derived; a document may state them, but only correctly.
    probe = Agent(**values)
    for key, derived in (("available_for_data", probe.available_for_data), ("effective_data_limit", probe.effective_data_limit)):
        if key in limits and limits[key] != derived:
            raise DocumentError(f"is derived and must be {derived}, not {limits[key]}", where=f"context_limits.{key}")
    return values


def _model_limits(values: dict[str, Any], limits: dict[str, Any]) -> dict[str, str]:
    """Fill the window limits the document leaves out from the catalogue's entry for the
    agent's model (its maximum output, and its context window less that output), and say
    where each came from: the document, the catalogue, or Switchyard's default."""
    entry = model_entry(values["backend"], values["model"])
    sources: dict[str, str] = {key: "the agent's document" for key in ("max_input_tokens", "max_output_tokens") if key in limits}
    if "max_output_tokens" not in limits:
        if entry.max_output:
            values["max_output_tokens"] = entry.max_output
            sources["max_output_tokens"] = f"{entry.model}'s maximum output, from {entry.sources['max_output']}"
        else:
            sources["max_output_tokens"] = "Switchyard's default (the catalogue has no maximum output for the model)"
    if "max_input_tokens" not in limits:
        if entry.context_window:
            values["max_input_tokens"] = max(1, entry.context_window - values["max_output_tokens"])
            sources["max_input_tokens"] = (f"{entry.model}'s context window of {entry.context_window} less "
                                           f"max_output_tokens, from {entry.sources['context_window']}")
        else:
            sources["max_input_tokens"] = "Switchyard's default (the catalogue has no context window for the model)"
    return sources


def _model_encoding(values: dict[str, Any], runtime: dict[str, Any]) -> str:
    """Set the encoding the agent's tokens are counted in: its model's, as the catalogue names
    it (a document may state it, but only that one); for a model the catalogue names none
    for, the document's or cl100k_base. Say where it came from; refuse one Switchyard cannot
    count rather than count in another."""
    entry = model_entry(values["backend"], values["model"])
    stated = runtime.get("encoding")
    if entry.encoding:
        if stated is not None and stated != entry.encoding:
            raise DocumentError(f"the model {entry.model} counts in {entry.encoding} (from "
                                f"{entry.sources['encoding']}), not '{stated}': leave the encoding out or "
                                f"name {entry.encoding}", where="runtime.encoding")
        values["encoding"] = entry.encoding
        source = f"{entry.model}'s encoding, from {entry.sources['encoding']}"
    elif stated is not None:
        source = "the agent's document (the catalogue names no encoding for the model)"
    else:
        source = "Switchyard's default (the catalogue names no encoding for the model)"
    try:
        check_encoding(values["encoding"])
    except UnknownEncoding as error:
        whose = f"the model {entry.model} counts in {entry.encoding} (from {entry.sources['encoding']}), but " \
            if entry.encoding else ""
        raise DocumentError(f"{whose}{error}", where="runtime.encoding") from None
    return source


def _set_lineage(agent: Agent, parent: Agent | None) -> None:
    """Attach `agent` under `parent` and re-derive root and level for its whole subtree."""
    if parent is not None:
        ancestor: Agent | None = parent
        while ancestor is not None:
            if ancestor.pk == agent.pk:
                raise DocumentError(
                    f"'{parent.agent_id}' descends from '{agent.agent_id}', so it cannot be its parent",
                    where="lineage.parent_id",
                )
            ancestor = ancestor.parent
    agent.parent = parent
    _derive_lineage(agent)


def _derive_lineage(agent: Agent) -> None:
    agent.root = agent.parent.root if agent.parent else agent
    agent.level = agent.parent.level + 1 if agent.parent else 0
    Agent.objects.filter(pk=agent.pk).update(parent=agent.parent, root=agent.root, level=agent.level)
    for child in agent.children.all():
        child.parent = agent
        _derive_lineage(child)


def _check_stated_lineage(document: dict[str, Any], agent: Agent) -> None:
    lineage = document.get("lineage", {})
    root_id = agent.root.agent_id if agent.root is not None else agent.agent_id
    if lineage.get("root_id") not in (None, root_id):
        raise DocumentError(f"is derived from the parent and must be '{root_id}', not '{lineage['root_id']}'", where="lineage.root_id")
    if "level" in lineage and lineage["level"] != agent.level:
        raise DocumentError(f"is derived from the parent and must be {agent.level}, not {lineage['level']}", where="lineage.level")


def check_stated_children(document: dict[str, Any]) -> None:
    """children_ids is derived: each child it names must exist and name this agent as its parent.

    Checked once a whole import is in, so parents and children can come in one list.
    """
    for child_id in document.get("lineage", {}).get("children_ids", []):
        child = Agent.objects.filter(agent_id=child_id).select_related("parent").first()
        if child is None:
            raise DocumentError(f"child '{child_id}' does not exist", where="lineage.children_ids")
        if child.parent is None or child.parent.agent_id != document["agent_id"]:
            actual = child.parent.agent_id if child.parent else "none"
            raise DocumentError(
                f"lists '{child_id}', whose parent is {actual!r}, not '{document['agent_id']}'",
                where="lineage.children_ids",
            )


def _freeze_version(agent: Agent, version: str, *, actor: str) -> AgentVersion:
    frozen = AgentVersion.objects.create(agent=agent, version=version, content=versioned_content(agent), created_by=actor)
    # Workers keep each workflow's graph, with the versions its nodes run, until the
    # workflow changes: a new version of one of its agents is such a change.
    apps.get_model("workflows", "Workflow").objects.filter(nodes__agent=agent).update(updated_at=timezone.now())
    return frozen


@transaction.atomic
def agent_import_document(document: dict[str, Any], *, actor: str = "") -> tuple[Agent, str]:
    """Create or update the agent a §2.1 document describes. Returns (agent, what happened)."""
    check_shape(document, AgentDocument, "agent")
    fields = {
        "name": document["name"],
        "type": document.get("type", Agent.Type.BUSINESS),
        "prompt_config": document.get("prompt_config", {}),
        "capabilities": document.get("capabilities", {}),
        "constraints": document.get("constraints", []),
        **_runtime_and_limits(document),
    }
    metadata = document.get("metadata", {})
    parent_id = document.get("lineage", {}).get("parent_id")
    parent = get_agent(parent_id, where="lineage.parent_id") if parent_id else None
    status = document.get("status", Agent.Status.ACTIVE)
    now = timezone.now()

    agent = lock_row(Agent, missing_ok=True, agent_id=document["agent_id"])
    if agent is None:
        agent = Agent.objects.create(
            agent_id=document["agent_id"],
            version=document.get("version", DEFAULT_VERSION),
            status=status,
            created_at=parse_datetime(metadata.get("created_at"), "metadata.created_at") or now,
            updated_at=parse_datetime(metadata.get("updated_at"), "metadata.updated_at") or now,
            created_by=metadata.get("created_by", actor),
            **fields,
        )
        _set_lineage(agent, parent)
        _freeze_version(agent, agent.version, actor=actor)
        _check_stated_lineage(document, agent)
        _audit_save("agent.create", agent, None, actor=actor)
        return agent, "created"

    was = audit_snapshot(agent)
    outcome = _agent_apply_changes(
        agent, fields=fields, requested_version=document.get("version"), status=status, actor=actor,
        updated_at=parse_datetime(metadata.get("updated_at"), "metadata.updated_at"),
    )
    if parent != agent.parent:
        _set_lineage(agent, parent)
        outcome = "updated"
    _check_stated_lineage(document, agent)
    if outcome != "unchanged":
        _audit_save("agent.update", agent, was, actor=actor)
    return agent, outcome


def audit_snapshot(agent: Agent) -> dict[str, Any]:
    """What the audit trail compares of an agent before and after a change: its version,
    status and parent, and what a version freezes."""
    parent = Agent.objects.filter(pk=agent.parent_id).values_list("agent_id", flat=True).first() \
        if agent.parent_id else None
    return {"version": agent.version, "status": agent.status, "parent": parent, **versioned_content(agent)}


def _audit_save(action: str, agent: Agent, was: dict[str, Any] | None, *, actor) -> None:
    before, after = changes(was, audit_snapshot(agent), always=("version",))
    record(action, actor=actor, object_type="agent", object_id=agent.agent_id, before=before, after=after)


def _agent_apply_changes(
    agent: Agent, *, fields: dict[str, Any], requested_version: str | None, status: str, actor: str, updated_at=None
) -> str:
    before = versioned_content(agent)
    for name, value in fields.items():
        setattr(agent, name, value)
    content = versioned_content(agent)
    changed = content != before
    versions = {version.version: version for version in agent.versions.all()}
    taken = set(versions)
    # A version never changes: a document naming one that exists with other content is
    # stored as the next version, and the outcome says so rather than "updated" alone.
    renamed = requested_version in versions and versioned_content(
        agent_as_of(agent, versions[requested_version])) != content
    if requested_version and requested_version not in taken:
        agent.version = requested_version  # the author named a new version
    elif changed:
        agent.version = next_version(agent.version, taken)
    new_version = agent.version not in taken
    if status != agent.status:
        Agent.STATES.check(agent.status, status)
        agent.status = status
        changed = True
    if not (changed or new_version):
        return "unchanged"
    agent.updated_at = updated_at or timezone.now()
    agent.save()
    if new_version:
        _freeze_version(agent, agent.version, actor=actor)
    if renamed:
        return (f"updated, stored as version {agent.version}: version '{echo(requested_version or '')}' exists with other "
                f"content, and a version never changes")
    return "updated"


# --- the API's writes ---------------------------------------------------------------
# Agents as people create and change them one at a time (POST, PUT, deprecate); the
# import function above remains the one way documents come in.

INT_MAX = 2**31 - 1  # the largest value a PositiveIntegerField holds on PostgreSQL
READ_ONLY_KEYS = ("versions", "limit_sources")  # what the detail adds to the §2.1 document; a PUT may echo it back


def _conflict(message: str, **details: Any) -> SwitchyardError:
    return SwitchyardError(message, code="CONFLICT", details=details)


def _agent_edit_document(document: Any, *, current: Agent | None) -> dict[str, Any]:
    """A §2.1 document as the API and the editor take it, checked and ready for
    `agent_import_document`: beyond an import's checks, each of its tools must be one of the
    catalogue's.

    The server owns `metadata` (who created the agent, when it changed) and the detail's
    read-only `versions` and `lineage.ancestors`: they may be sent back and are ignored.
    On an edit, `status` and `lineage.parent_id` keep their values when left out (status
    moves by its own operations; `"parent_id": null` makes the agent a root).
    """
    if not isinstance(document, dict):
        raise DocumentError(f"expected a JSON object (an agent document), got {type(document).__name__}")
    document = {key: value for key, value in document.items() if key not in READ_ONLY_KEYS}
    if isinstance(document.get("lineage"), dict):
        document["lineage"] = {key: value for key, value in document["lineage"].items() if key != "ancestors"}
    check_shape(document, AgentDocument, "agent")
    check_storable(document)
    limits, runtime = document.get("context_limits", {}), document.get("runtime", {})
    for key, value in limits.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > INT_MAX:
            raise DocumentError(f"must be at most {INT_MAX}, not {value}", where=f"context_limits.{key}")
    for key in ("model", "role"):
        field = Agent._meta.get_field(key)
        assert isinstance(field, models.CharField) and field.max_length is not None
        longest = field.max_length
        if len(runtime.get(key, "")) > longest:
            raise DocumentError(f"is longer than {longest} characters", where=f"runtime.{key}")
    # An author names tools of the catalogue; an imported document may name any (a missing tool at run time).
    problems = unknown_tool_problems(document.get("capabilities", {}).get("tools", []))
    if problems:
        raise DocumentError.at_fields(problems)

    document.pop("metadata", None)
    if current is not None:
        document.setdefault("status", current.status)
        lineage = dict(document.get("lineage", {}))
        lineage.setdefault("parent_id", current.parent.agent_id if current.parent is not None else None)
        document["lineage"] = lineage
    return document


@transaction.atomic
def agent_create(*, document: Any, user) -> Agent:
    """Create the agent a §2.1 document describes; an agent_id already taken is a conflict, never an update."""
    document = _agent_edit_document(document, current=None)
    if document.get("lineage", {}).get("parent_id"):
        require_role(user, ADMIN, to="create a child agent; ask for one with a derive request, which an approver "
                                     "approves")
    agent_id = document["agent_id"]
    taken = _conflict(f"agent '{agent_id}' exists already; change it with PUT /api/agents/{agent_id}", agent_id=agent_id)
    if Agent.objects.filter(agent_id=agent_id).exists():
        raise taken
    try:
        with transaction.atomic():
            agent, _ = agent_import_document(document, actor=user.get_username())
            check_stated_children(document)
    except IntegrityError:  # created by someone else since the check above
        raise taken from None
    return agent


@transaction.atomic
def agent_update(*, agent: Agent, document: Any, user) -> Agent:
    """Edit an agent with a whole §2.1 document; a change to what it is freezes a new version."""
    if isinstance(document, dict) and document.get("agent_id", agent.agent_id) != agent.agent_id:
        raise DocumentError(
            f"is {document['agent_id']!r} but the path names '{agent.agent_id}'; an agent's id cannot change",
            where="agent_id",
        )
    if isinstance(document, dict):
        document = {**document, "agent_id": agent.agent_id}
    document = _agent_edit_document(document, current=agent)
    if document["lineage"].get("parent_id") != (agent.parent.agent_id if agent.parent is not None else None):
        require_role(user, ADMIN, to="change an agent's parent; a child agent comes from an approved derive request")
    updated, _ = agent_import_document(document, actor=user.get_username())
    check_stated_children(document)
    return updated


@transaction.atomic
def agent_deprecate(*, agent: Agent, user=None) -> Agent:
    if agent.status == Agent.Status.DEPRECATED:
        raise IllegalTransition(f"agent '{agent.agent_id}' is deprecated already", details={"status": agent.status})
    was = agent.status
    change_status(agent, Agent.STATES, Agent.Status.DEPRECATED)
    record("agent.deprecate", actor=user, object_type="agent", object_id=agent.agent_id,
           before={"status": was}, after={"status": agent.status})
    return agent
