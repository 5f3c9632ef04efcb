"""Writes for blueprints and workflows. A workflow is validated whole before anything is written."""
from __future__ import annotations

import re
from collections import Counter
from functools import cache
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max, ProtectedError
from django.utils import timezone

from agents.models import Agent
from agents.services import check_storable, get_agent
from core.audit import changes, record
from core.errors import DocumentError, NotFound, SwitchyardError, WorkflowInvalid
from core.jsonutil import check_shape
from core.status_writes import lock_row
from engine.dataflow import dataflow_warnings
from engine.inputs import input_schema_problem
from engine.json_schema import schema_refusal
from engine.subworkflows import refs_of
from engine.validation import validate_workflow
from workflows.documents import blueprint_document, task_chain_defaults, workflow_document
from workflows.models import Blueprint, BlueprintAgent, Contract, Node, Transition, Workflow, WorkflowVersion
from workflows.schemas import BlueprintDocument, TaskChainDocument, WorkflowDocument

CONTRACT_ARROW = re.compile(r"\s*(?:→|->)\s*")


def workflow_problems(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Shape and graph problems of a workflow document, without saving anything."""
    return workflow_findings(document)[0]


def workflow_findings(document: dict[str, Any], *, warnings: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The problems of a workflow document (any refuses a save), and when asked its warnings
    (engine/dataflow.py: data that flows nowhere, which never refuses a save). A document
    whose shape is wrong has that one problem and no warnings."""
    try:
        check_shape(document, WorkflowDocument, "workflow")
    except DocumentError as error:
        return [_problem_of(error)], []
    document = _blanks_as_none(document)
    problems = _graph_problems(document)
    try:
        _input_schema(document.get("input_schema"))
    except DocumentError as error:  # what a save would refuse, said before it
        problems.append(_problem_of(error))
    return problems, dataflow_warnings(document) if warnings else []


def _problem_of(error: DocumentError) -> dict[str, Any]:
    """A refusal of the document as a problem of its own, in validation's shape."""
    return {"where": error.where, "node": None, "transition": None, "code": error.code, "message": error.problem}


def _blanks_as_none(document: dict[str, Any]) -> dict[str, Any]:
    """The seeds' optional strings given as "" (no fallback agent, no condition …) mean none,
    as null or leaving them out does: the same document, with those keys dropped."""
    def without_blanks(part: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
        return {key: value for key, value in part.items() if not (key in keys and value == "")}

    document = dict(document)
    for section, keys in (("error_handling", ("fallback_agent", "escalate_to")), ("evaluation", ("judge_agent",))):
        if isinstance(document.get(section), dict):
            document[section] = without_blanks(document[section], keys)
    if isinstance(document.get("transitions"), list):
        document["transitions"] = [without_blanks(t, ("condition", "on_success", "on_failure"))
                                   if isinstance(t, dict) else t for t in document["transitions"]]
    return document


def _graph_problems(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Problems of a shape-checked workflow document, with the agents it names looked up once."""
    referenced = {node["agent_ref"] for node in document["nodes"]}
    referenced |= {v for v in document.get("error_handling", {}).values() if isinstance(v, str)}
    if isinstance(document.get("evaluation", {}).get("judge_agent"), str):
        referenced.add(document["evaluation"]["judge_agent"])
    known = Agent.objects.filter(agent_id__in=referenced).values_list("agent_id", flat=True)
    # Each stored workflow looked up once, however many of the document's nodes reach it.
    return validate_workflow(document, known, cache(workflow_references))


def workflow_references(workflow_id: str, version: int | None) -> list[tuple[str, int | None]] | None:
    """The workflows that the sub-workflow nodes of `workflow_id` run (engine/subworkflows.py),
    as its version `version` has them (None: its latest version, else the workflow as it is
    now); None when that workflow or version does not exist."""
    versions = WorkflowVersion.objects.filter(workflow__workflow_id=workflow_id)
    if version is not None:
        document = versions.filter(number=version).values_list("document", flat=True).first()
    else:
        document = versions.order_by("-number").values_list("document", flat=True).first()
        if document is None:
            workflow = Workflow.objects.filter(workflow_id=workflow_id).first()
            document = workflow and workflow_document(workflow)
    return None if document is None else refs_of(document["nodes"])


COST_LIMITS = ("max_cost", "max_node_cost", "on_budget")


@transaction.atomic
def workflow_import_document(document: dict[str, Any], *, actor: str = "", source_format: str = "workflow",
                             note: str = "", restored_from: int | None = None):
    """Create or replace the workflow a §4.1 document describes. Returns (workflow, what happened).
    A save that creates or changes the workflow adds its next version (by `actor`, with `note`),
    and its entry on the audit trail (a restore's, when it brings back version `restored_from`)."""
    check_shape(document, WorkflowDocument, "workflow")
    # A transition's strings are stored as given, "" included, so an export gives back what
    # was imported; "" means none wherever they are read.
    transitions = document.get("transitions", [])
    document = _blanks_as_none(document)
    problems = _graph_problems(document)
    if problems:
        raise WorkflowInvalid(problems, workflow_id=document["workflow_id"])

    handling = document.get("error_handling", {})
    limits = document.get("limits", {})
    evaluation = document.get("evaluation", {})
    defaults = {field.name: field.get_default() for field in Workflow._meta.fields if field.name in ("max_steps", "max_wall_seconds")}
    values = {
        "name": document["name"],
        "topology": document["topology"],
        "retry_count": handling.get("retry_count", 0),
        "fallback_agent": Agent.objects.get(agent_id=handling["fallback_agent"]) if handling.get("fallback_agent") else None,
        "escalate_to": Agent.objects.get(agent_id=handling["escalate_to"]) if handling.get("escalate_to") else None,
        "max_steps": limits.get("max_steps", defaults["max_steps"]),
        "max_wall_seconds": limits.get("max_wall_seconds", defaults["max_wall_seconds"]),
        "cost_limits": {key: limits[key] for key in COST_LIMITS if limits.get(key) is not None},
        "source_format": source_format,
        "domain": document.get("domain", ""),
        "description": document.get("description") or "",
        "judge_agent": Agent.objects.get(agent_id=evaluation["judge_agent"]) if evaluation.get("judge_agent") else None,
        "quality_gate": evaluation.get("quality_gate") or None,
        "input_schema": _input_schema(document.get("input_schema")),
    }
    workflow = lock_row(Workflow, missing_ok=True, workflow_id=document["workflow_id"])
    before = workflow_document(workflow) if workflow else None
    if workflow is None:
        workflow = Workflow.objects.create(workflow_id=document["workflow_id"], **values)
    else:
        for name, value in values.items():
            setattr(workflow, name, value)
        workflow.save()
        workflow.nodes.all().delete()
        workflow.transitions.all().delete()

    agents = {a.agent_id: a for a in Agent.objects.filter(agent_id__in={n["agent_ref"] for n in document["nodes"]})}
    Node.objects.bulk_create(
        Node(
            workflow=workflow,
            node_id=node["id"],
            position=position,
            agent=agents[node["agent_ref"]],
            input_mapping=node.get("input_mapping", {}),
            output_mapping=node.get("output_mapping", {}),
            output_schema=node.get("output_schema", ""),
            compress=node.get("compress", False),
            compress_model=node.get("compress_model", "flash"),
            compress_ratio=node.get("compress_ratio", 0.3),
            layout=node.get("layout"),
            gate=node.get("gate"),
            subworkflow=node.get("subworkflow"),
        )
        for position, node in enumerate(document["nodes"])
    )
    Transition.objects.bulk_create(
        Transition(
            workflow=workflow,
            position=position,
            from_node=t["from"],
            to_node=t["to"],
            condition=t.get("condition"),
            on_success=t.get("on_success"),
            on_failure=t.get("on_failure"),
        )
        for position, t in enumerate(transitions)
    )
    after = workflow_document(workflow)
    if before is None:
        saved = _append_version(workflow, after, actor=actor, note=note)
        _audit_save("workflow.create", workflow, None, saved, actor=actor)
        return workflow, "created"
    if after == before and workflow.source_format == source_format:
        return workflow, "unchanged"
    Workflow.objects.filter(pk=workflow.pk).update(updated_at=timezone.now())
    saved = _append_version(workflow, after, actor=actor, note=note)
    _audit_save("workflow.restore" if restored_from else "workflow.update", workflow, before, saved, actor=actor,
                restored_from=restored_from)
    return workflow, "updated"


def workflow_audit_summary(workflow: Workflow) -> dict[str, Any]:
    """What the audit trail keeps of a deleted workflow: its name, topology, nodes and versions."""
    return {"name": workflow.name, "topology": workflow.topology,
            "nodes": list(workflow.nodes.order_by("position").values_list("node_id", flat=True)),
            "versions": workflow.versions.count()}


def _audit_save(action: str, workflow: Workflow, before: dict[str, Any] | None, saved: WorkflowVersion, *,
                actor: str, restored_from: int | None = None) -> None:
    """One entry for a save that made version `saved`: the document's top-level keys that
    changed, old and new, with the version numbers (and the version a restore brought back)."""
    was = None if before is None else {"version": saved.number - 1, **before}
    was_part, now_part = changes(was, {"version": saved.number, **saved.document}, always=("version",))
    if restored_from is not None and now_part is not None:
        now_part["restored_from"] = restored_from
    record(action, actor=actor, object_type="workflow", object_id=workflow.workflow_id, before=was_part, after=now_part)


def _input_schema(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """A workflow's `input_schema` (engine/inputs.py), refused unless it is a JSON Schema of an object."""
    if schema is None:
        return None
    _check_user_schema(schema, where="input_schema")
    problem = input_schema_problem(schema)
    if problem:
        inside, what = problem
        raise DocumentError(what, where=f"input_schema{inside}")
    return schema


def _check_user_schema(schema: Any, *, where: str) -> None:
    """Refuse a JSON Schema a person wrote (a contract's, a workflow's inputs) that is not
    one, naming the field and the place inside it."""
    refusal = schema_refusal(schema, field=where.rsplit(".", 1)[-1])
    if refusal:
        raise DocumentError(refusal, where=where)


def _append_version(workflow: Workflow, document: dict[str, Any], *, actor: str, note: str) -> WorkflowVersion:
    """The next version of a workflow whose row is locked (or new): its number follows the last."""
    last = workflow.versions.aggregate(Max("number"))["number__max"] or 0
    return WorkflowVersion.objects.create(workflow=workflow, number=last + 1, document=document,
                                          created_by=actor or "", note=note)


@transaction.atomic
def workflow_version_restore(*, workflow: Workflow, number: int, actor: str = "") -> WorkflowVersion:
    """Make an old version the workflow's definition again, as a new version: its document is
    saved as any edit is, so it is validated against the agents there are now (a version naming
    an agent since deleted is refused with the problem)."""
    version = workflow_version_get(workflow=workflow, number=number)
    document = {**version.document, "workflow_id": workflow.workflow_id}
    _, happened = workflow_import_document(document, actor=actor, source_format=workflow.source_format,
                                           note=f"restored from version {number}", restored_from=number)
    if happened == "unchanged":
        raise _conflict(f"workflow '{workflow.workflow_id}' is already as version {number} was; nothing to restore",
                        workflow_id=workflow.workflow_id, version=number)
    return workflow.versions.order_by("-number")[0]  # the version just saved


def workflow_version_get(*, workflow: Workflow, number: Any) -> WorkflowVersion:
    """A version of the workflow by its number; an unknown number is refused naming the versions there are."""
    version = workflow.versions.filter(number=number).first() if isinstance(number, int) and number > 0 else None
    if version is None:
        numbers = list(workflow.versions.values_list("number", flat=True))
        there = f"1 to {numbers[-1]}" if numbers else "none"
        raise NotFound(f"workflow '{workflow.workflow_id}' has no version {number} (its versions: {there})",
                       details={"workflow_id": workflow.workflow_id, "version": number, "versions": numbers})
    return version


def task_chain_import_document(document: dict[str, Any], *, actor: str = ""):
    """A §7.1 task chain becomes a `seq` workflow: one node per task, its input as the node's input mapping."""
    check_shape(document, TaskChainDocument, "task_chain")
    chain = document["task_chain"]
    default_id, default_name = task_chain_defaults(chain)
    workflow = {
        "workflow_id": document.get("workflow_id", default_id),
        "name": document.get("name", default_name),
        "topology": "seq",
        "nodes": [
            {
                "id": task["task_id"],
                "agent_ref": task["agent"],
                "input_mapping": task.get("input", {}),
                **({"output_schema": task["output_schema"]} if "output_schema" in task else {}),
            }
            for task in chain
        ],
    }
    try:
        return workflow_import_document(workflow, actor=actor, source_format="task_chain")
    except WorkflowInvalid as error:
        # Name tasks as the chain does: task_chain[<task_id>] rather than nodes[<id>].
        for problem in error.problems:
            problem["where"] = problem["where"].replace("nodes[", "task_chain[").replace(".input_mapping", ".input")
        raise WorkflowInvalid(error.problems, workflow_id=workflow["workflow_id"]) from None


@transaction.atomic
def blueprint_import_document(document: dict[str, Any], *, actor: str = ""):
    """Create or replace the blueprint a §3.1 document describes; contracts must be valid JSON Schemas."""
    check_shape(document, BlueprintDocument, "blueprint")
    members = []
    for index, entry in enumerate(document.get("agents", [])):
        members.append((get_agent(entry["agent_ref"], where=f"agents[{index}].agent_ref"), entry))
    member_ids = {agent.agent_id for agent, _ in members}
    contracts = []
    keys_by_pair: dict[tuple[str, ...], str] = {}
    for key, contract in document.get("contracts", {}).items():
        where = f"contracts['{key}']"
        sides = CONTRACT_ARROW.split(key.strip())
        if len(sides) != 2 or not all(sides):
            raise DocumentError("a contract key reads 'agent_a → agent_b'", where=where)
        first = keys_by_pair.setdefault(tuple(sides), key)
        if first != key:
            raise DocumentError(f"names the same pair as '{first}': one pair of agents has one contract", where=where)
        for side in sides:
            if side not in member_ids:
                raise DocumentError(f"'{side}' is not one of the blueprint's agents", where=where)
        _check_user_schema(contract["schema"], where=f"{where}.schema")
        contracts.append((key, sides, contract))

    values = {"name": document["name"], "version": document.get("version", "1.0.0"), "domain": document.get("domain", "")}
    blueprint = lock_row(Blueprint, missing_ok=True, blueprint_id=document["blueprint_id"])
    before = blueprint_document(blueprint) if blueprint else None
    if blueprint is None:
        blueprint = Blueprint.objects.create(blueprint_id=document["blueprint_id"], **values)
    else:
        Blueprint.objects.filter(pk=blueprint.pk).update(**values)
        blueprint.refresh_from_db()
        blueprint.agents.all().delete()
        blueprint.contracts.all().delete()
    BlueprintAgent.objects.bulk_create(
        BlueprintAgent(
            blueprint=blueprint, agent=agent, source=entry["source"],
            role_in_workflow=entry.get("role_in_workflow", ""), position=position,
        )
        for position, (agent, entry) in enumerate(members)
    )
    by_id = {agent.agent_id: agent for agent, _ in members}
    Contract.objects.bulk_create(
        Contract(
            blueprint=blueprint, key=key, from_agent=by_id[sides[0]], to_agent=by_id[sides[1]],
            data_type=contract["data_type"], schema=contract["schema"], position=position,
        )
        for position, (key, sides, contract) in enumerate(contracts)
    )
    if before is not None and blueprint_document(blueprint) == before:
        return blueprint, "unchanged"
    now = timezone.now()
    # Workers keep each workflow's graph, with the contracts between its agents, until the
    # workflow changes: new contracts are such a change.
    Workflow.objects.filter(nodes__agent__in=by_id.values()).update(updated_at=now)
    was_part, now_part = changes(before, blueprint_document(blueprint), always=("version",))
    record("blueprint.create" if before is None else "blueprint.update", actor=actor, object_type="blueprint",
           object_id=blueprint.blueprint_id, before=was_part, after=now_part)
    if before is None:
        return blueprint, "created"
    Blueprint.objects.filter(pk=blueprint.pk).update(updated_at=now)
    return blueprint, "updated"


# -- the API's writes ------------------------------------------------------------------
# Blueprints and workflows as people create, replace and delete them one at a time; the
# import functions above stay the one way a document is written.


def _conflict(message: str, **details: Any) -> SwitchyardError:
    return SwitchyardError(message, code="CONFLICT", details=details)


def _check_lengths(values: list[tuple[str, Any, Any]]) -> None:
    """(where, value, model field) triples: a text longer than its column is refused here,
    by name, rather than by PostgreSQL (SQLite would store it whole)."""
    for where, value, field in values:
        if isinstance(value, str) and len(value) > field.max_length:
            raise DocumentError(f"is longer than {field.max_length} characters", where=where)


def _with_id(document: Any, key: str, expected: str) -> dict[str, Any]:
    """A PUT's document: its id must be the path's, or absent (then it is the path's)."""
    if not isinstance(document, dict):
        raise DocumentError(f"expected a JSON object, got {type(document).__name__}")
    if key in document and document[key] != expected:
        raise DocumentError(f"is {document[key]!r} but the path names '{expected}'; an id cannot change", where=key)
    return {**document, key: expected}


def _checked_blueprint(document: Any) -> dict[str, Any]:
    check_shape(document, BlueprintDocument, "blueprint")
    check_storable(document)
    field = Blueprint._meta.get_field
    lengths = [("version", document.get("version"), field("version")), ("domain", document.get("domain"), field("domain"))]
    lengths += [(f"agents[{index}].role_in_workflow", entry.get("role_in_workflow"),
                 BlueprintAgent._meta.get_field("role_in_workflow"))
                for index, entry in enumerate(document.get("agents", []))]
    for key, contract in document.get("contracts", {}).items():
        lengths += [(f"contracts['{key}']", key, Contract._meta.get_field("key")),
                    (f"contracts['{key}'].data_type", contract["data_type"], Contract._meta.get_field("data_type"))]
    _check_lengths(lengths)
    return document


def _checked_workflow(document: Any) -> dict[str, Any]:
    check_shape(document, WorkflowDocument, "workflow")
    check_storable(document)
    _check_lengths([
        (f"nodes[{node['id']}].{key}", node.get(key), Node._meta.get_field(key))
        for node in document["nodes"] for key in ("output_schema", "compress_model")
    ])
    return document


def _create_only(model, id_field: str, document: dict, importer, *, actor: str, api_path: str):
    """Import a document as a NEW row: an id already taken is a conflict, never an update."""
    identifier = document[id_field]
    taken = _conflict(f"{model._meta.verbose_name} '{identifier}' exists already; replace it with PUT "
                      f"/api/{api_path}/{identifier}", **{id_field: identifier})
    if model.objects.filter(**{id_field: identifier}).exists():
        raise taken
    try:
        with transaction.atomic():
            created, _ = importer(document, actor=actor)
    except IntegrityError:  # created by someone else since the check above
        raise taken from None
    return created


@transaction.atomic
def blueprint_create(*, document: Any, actor: str = "") -> Blueprint:
    """Create the blueprint a §3.1 document describes; an id already taken is a conflict, never an update."""
    return _create_only(Blueprint, "blueprint_id", _checked_blueprint(document), blueprint_import_document,
                        actor=actor, api_path="blueprints")


@transaction.atomic
def blueprint_replace(*, blueprint: Blueprint, document: Any, actor: str = "") -> Blueprint:
    """Replace a blueprint's definition (name, agents, contracts) with a whole §3.1 document."""
    document = _checked_blueprint(_with_id(document, "blueprint_id", blueprint.blueprint_id))
    replaced, _ = blueprint_import_document(document, actor=actor)
    return replaced


@transaction.atomic
def workflow_create(*, document: Any, actor: str = "") -> Workflow:
    """Create the workflow a §4.1 document describes, validated whole first (WORKFLOW_INVALID
    lists every problem with its node); an id already taken is a conflict, never an update."""
    return _create_only(Workflow, "workflow_id", _checked_workflow(document), workflow_import_document,
                        actor=actor, api_path="workflows")


@transaction.atomic
def workflow_replace(*, workflow: Workflow, document: Any, actor: str = "") -> Workflow:
    """Replace a workflow's definition with a whole §4.1 document; an invalid one changes nothing."""
    document = _checked_workflow(_with_id(document, "workflow_id", workflow.workflow_id))
    replaced, _ = workflow_import_document(document, actor=actor)
    return replaced


@transaction.atomic
def workflow_delete(*, workflow: Workflow, actor=None) -> None:
    """Delete a workflow that was never run. Executions are records and point at their
    workflow, and so do the evaluations that name it; their foreign keys protect it, so
    either keeps it (a conflict that counts them)."""
    locked = lock_row(Workflow, workflow.pk, missing_ok=True)
    if locked is None:
        raise NotFound(f"no workflow '{workflow.workflow_id}'", details={"workflow_id": workflow.workflow_id})
    try:
        with transaction.atomic():
            was = workflow_audit_summary(locked)
            locked.delete()
            record("workflow.delete", actor=actor, object_type="workflow", object_id=locked.workflow_id, before=was)
    except ProtectedError as error:
        records = Counter(type(record)._meta.model_name for record in error.protected_objects)
        executions, evaluations = records["execution"], records["evaluation"]
        kept = " and ".join(filter(None, [f"{executions} execution(s)" if executions else None,
                                          f"{evaluations} evaluation(s)" if evaluations else None]))
        raise _conflict(f"workflow '{locked.workflow_id}' has {kept}, which are records and must stay; "
                        "it cannot be deleted", workflow_id=locked.workflow_id, executions=executions,
                        evaluations=evaluations) from None
