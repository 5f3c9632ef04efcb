"""A workflow's inputs: what a run of it must be given.

A workflow may declare its inputs as a JSON Schema, `input_schema`, beside the seed's §4.1
fields: an object schema whose properties are the inputs (type, description, default) and
whose `required` lists those a run cannot go without:

    "input_schema": {
      "type": "object",
      "properties": {"repository": {"type": "string", "description": "the repository to analyse"}},
      "required": ["repository"]
    }

A run's input is checked against it before the run starts (`checked_input`): an input that
breaks it is refused naming the input, and the defaults of the inputs it leaves out are
filled in. A workflow that declares nothing takes any input, as it always did.
`inferred_input_schema` drafts a schema from the `$.input…` paths the nodes read, for an
author to start from. Pure: the services store the schema and call these.
"""
from __future__ import annotations

import re
from typing import Any

from engine.dataflow import RESERVED_INPUTS
from engine.json_schema import SchemaValidator, object_schema_problem

# `$.input.name…` or `$.input['name']…`: the input a path reads.
_INPUT_PATH = re.compile(r"^\$\.input(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[['\"]([^'\"]+)['\"]\])")


def read_inputs(document: dict[str, Any]) -> dict[str, list[str]]:
    """The inputs the document's nodes read through `$.input…` paths, each with the nodes
    that read it, in the order they first appear. A document still being written may be
    malformed (its problems are found elsewhere): what is not a node's mapping reads nothing."""
    read: dict[str, list[str]] = {}
    nodes = document.get("nodes")
    for node in nodes if isinstance(nodes, list) else []:
        mapping = node.get("input_mapping") if isinstance(node, dict) else None
        for key, value in (mapping if isinstance(mapping, dict) else {}).items():
            if key in RESERVED_INPUTS or not isinstance(value, str):
                continue
            match = _INPUT_PATH.match(value)
            if match:
                readers = read.setdefault(match.group(1) or match.group(2), [])
                if str(node.get("id")) not in readers:
                    readers.append(str(node.get("id")))
    return read


def inferred_input_schema(document: dict[str, Any]) -> dict[str, Any]:
    """A first draft of the document's `input_schema`: every input its nodes read, each
    required and of any type, described by the nodes that read it."""
    read = read_inputs(document)
    return {"type": "object",
            "properties": {name: {"description": f"read by {', '.join(nodes)}"} for name, nodes in read.items()},
            "required": list(read)}


def input_schema_problem(schema: Any) -> tuple[str, str] | None:
    """What keeps `schema` from being a workflow's input schema beyond being a JSON Schema
    (checked first, elsewhere), as (where inside it, what): a run's input is an object, so
    the schema describes one; and a default that its own input would refuse would refuse
    every run that leaves the input out."""
    problem = object_schema_problem(schema, of="the run's input")
    if problem:
        return "", problem
    for name, spec in (schema.get("properties") or {}).items():
        if isinstance(spec, dict) and "default" in spec:
            error = next(iter(SchemaValidator(spec).iter_errors(spec["default"])), None)
            if error is not None:
                return f".properties.{name}.default", f"the default does not fit its input: {error.message}"
    return None


def checked_input(schema: dict[str, Any] | None, given: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The input a run starts with: `given`, with the defaults of the inputs it leaves out;
    and the problems that refuse it, each (where, what): "input.repository", "is required
    by the workflow (the repository to analyse)". No schema: `given` as it is."""
    if not schema:
        return given, []
    properties = schema.get("properties") or {}
    filled = {**{name: spec["default"] for name, spec in properties.items()
                 if isinstance(spec, dict) and "default" in spec and name not in given}, **given}
    problems = []
    for error in sorted(SchemaValidator(schema).iter_errors(filled), key=lambda e: list(map(str, e.absolute_path))):
        path = ".".join(map(str, error.absolute_path))
        if error.validator == "required":
            missing = next((name for name in error.validator_value if name not in (error.instance or {})), "")
            about = (properties.get(missing) or {}).get("description") if isinstance(properties.get(missing), dict) else None
            where = f"input.{path + '.' if path else ''}{missing}"
            problems.append((where, "is required by the workflow" + (f" ({about})" if about else "")))
        else:
            problems.append((f"input.{path}" if path else "input", error.message))
    return filled, problems
