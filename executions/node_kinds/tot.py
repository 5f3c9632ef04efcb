"""The Django side of a Tree-of-Thoughts node (tot-protocol): one node run, one search.

A node whose agent has the skill `tot_orchestrate` does not send one prompt to its
backend: the run plays the orchestrator and the explorer itself (the pure engine,
`engine.tot.run_tot`), and the other roles are agents. Calling a role sends
the role's agent one request through its own backend, with the protocol message as the
structured input (`inputs["message"]`, what the builtin's `game24_*` skills read) and
rendered as JSON in the prompt (what a model reads); the reply is the backend's output.

The node's configuration (a constant `tot` block in its input_mapping, so the §4.1
document shape is unchanged):

    "input_mapping": {
        "numbers": "$.input.numbers",              # the problem: a list of numbers,
        "problem": "$.input.problem",              #   or its text
        "search_config": "$.input.search_config",  # a run may override the node's settings
        "tot": {
            "task_type": "math_reasoning",
            "roles": {"decomposer": "ToT_Decomposer", "generator": "ToT_Generator",
                      "evaluator": "ToT_Evaluator", "synthesizer": "ToT_Synthesizer"},
            "search_config": {"strategy": "BFS", "breadth": 5, ...}  # SearchConfig fields
        }
    }

Every search is stored as a `ThoughtSearch` (tree, messages, stats, outcome) as soon as
it ends, before the node's result: a search that found nothing fails the node, and its
tree is then what a person wants to look at.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from agents.backends import BackendError, BackendRequest, get_backend
from agents.backends.metering import calling
from agents.models import Agent
from core.errors import DocumentError
from engine.context.errors import RefError
from engine.context.resolution import select_path
from engine.jsonpath import PathError
from engine.tot import INVALID_FORMAT, SearchConfig, ToTError, run_tot
from executions.models import NodeRun, ThoughtSearch
from executions.node_errors import NodeFailure
from executions.node_kinds.base import Performed, WorkerKind
from executions.output_readers import run_scope
from executions.prompts import PROMPT_LIMIT, prompt_items, skills

ROLES = ("decomposer", "generator", "evaluator", "synthesizer")
DEFAULT_ROLE_AGENTS = {"decomposer": "ToT_Decomposer", "generator": "ToT_Generator",
                       "evaluator": "ToT_Evaluator", "synthesizer": "ToT_Synthesizer"}
DEFAULT_TASK_TYPE = "math_reasoning"
# The reply each request expects (tot-protocol 1, 2, 3, 5).
REPLY_TYPES = {"decompose_task": "decomposition_result", "generate_thoughts": "generated_thoughts",
               "evaluate_thoughts": "evaluation_results", "synthesize_solution": "final_solution"}
ENVELOPE = ("from", "to", "type", "task_id", "error")
SETTINGS = {spec.name for spec in dataclasses.fields(SearchConfig)}


def perform_search(run: NodeRun, graph, node) -> Performed:
    """Run the node's search: read the problem and settings, call the role agents, store
    the ThoughtSearch; the output is `{"final_solution", "stats", "error"}`. A search that
    ends without a verified solution fails the node with the protocol's code (not
    retryable: the same search would end the same way)."""
    execution = run.execution
    problem, task_type, config, role_agents = search_settings(node, run_scope(execution, node, graph.plan))
    calls = RoleCalls(run, node, role_agents)
    task_id = f"{execution.execution_id}.{node.node_id}"
    try:
        result = run_tot(problem=problem, task_type=task_type, task_id=task_id, roles=calls.roles(), config=config)
    except BackendError as error:  # a role's backend failed in a way the search does not absorb
        raise NodeFailure(f"{calls.current}: {error}", code=error.code, retryable=error.retryable,
                          record=calls.record()) from None
    thought_search_store(run=run, problem=problem, task_type=task_type, result=result)
    if result.final_solution is None:  # the run's error says why: SEARCH_EXHAUSTED, INVALID_FORMAT, …
        assert result.error is not None, "a run without a solution has the error that says why"
        raise NodeFailure(result.error.message, code=result.error.code, retryable=False, record=calls.record())
    problem_met = result.error.as_dict() if result.error is not None else None
    return Performed({"final_solution": result.final_solution, "stats": result.stats, "error": problem_met},
                     calls.record())


def thought_search_store(*, run: NodeRun, problem: str, task_type: str, result) -> ThoughtSearch:
    """Store what the search did, for the node run (again, if the run was performed twice)."""
    search, _ = ThoughtSearch.objects.update_or_create(node_run=run, defaults={
        "execution_id": run.execution_id, "problem": problem, "task_type": task_type,
        "tree": result.tree.as_dict(), "messages": result.messages, "stats": result.stats,
        "final_solution": result.final_solution,
        "error": result.error.as_dict() if result.error is not None else None,
    })
    return search


def thought_tree_import_document(document: dict, *, actor: str = "") -> tuple[ThoughtSearch, str]:
    """A thought tree is recorded by the search that grew it, with its node run: it is
    exported, never imported."""
    raise DocumentError("a thought tree is recorded by the Tree-of-Thoughts search that grew it; "
                        "it can be exported (export_document thought_tree <node run id>), not imported")


# -- reading the node ---------------------------------------------------------------------


def search_settings(node, scope: dict) -> tuple[str, str, SearchConfig, dict[str, Agent]]:
    """(problem, task_type, config, role → agent) from the node's input_mapping and the run."""
    mapping = node.input_mapping or {}
    block = mapping.get("tot") or {}
    if not isinstance(block, dict):
        raise invalid("input_mapping.tot must be an object")
    task_type = block.get("task_type", DEFAULT_TASK_TYPE)
    if not isinstance(task_type, str) or not task_type:
        raise invalid("input_mapping.tot.task_type must be a non-empty string")

    problem = problem_of(mapped(mapping, "numbers", scope), mapped(mapping, "problem", scope))

    overrides = {}
    for where, settings in (("input_mapping.tot.search_config", block.get("search_config")),
                            ("the run's search_config", mapped(mapping, "search_config", scope))):
        if settings is None:
            continue
        if not isinstance(settings, dict):
            raise invalid(f"{where} must be an object")
        unknown = sorted(set(settings) - SETTINGS)
        if unknown:
            raise invalid(f"{where} has unknown settings {', '.join(unknown)} (known: {', '.join(sorted(SETTINGS))})")
        overrides.update(settings)
    try:
        config = SearchConfig.for_task(task_type, **overrides)
    except (TypeError, ValueError) as error:
        raise invalid(str(error)) from None

    roles = block.get("roles") or {}
    if not isinstance(roles, dict) or not all(isinstance(agent_id, str) for agent_id in roles.values()):
        raise invalid("input_mapping.tot.roles must map roles to agent ids")
    unknown = sorted(set(roles) - set(ROLES))
    if unknown:
        raise invalid(f"input_mapping.tot.roles names unknown roles {', '.join(unknown)} (roles: {', '.join(ROLES)})")
    names = {**DEFAULT_ROLE_AGENTS, **roles}
    agents = Agent.objects.in_bulk(set(names.values()), field_name="agent_id")
    missing = sorted({agent_id for agent_id in names.values() if agent_id not in agents})
    if missing:
        raise NodeFailure(f"the search's role agents {', '.join(missing)} do not exist", code="UNKNOWN_AGENT",
                          retryable=False)
    return problem, task_type, config, {role: agents[agent_id] for role, agent_id in names.items()}


def mapped(mapping: dict, name: str, scope: dict) -> Any:
    """An input of the node: a JSONPath over the run (None when the run has nothing there)
    or a constant; when the node does not map it, the run's input of that name."""
    if name not in mapping:
        return scope["input"].get(name)
    value = mapping[name]
    if isinstance(value, str) and value.startswith("$"):
        try:
            return select_path(scope, value)
        except (RefError, PathError):
            return None
    return value


def problem_of(numbers: Any, problem: Any) -> str:
    """The problem's text: the numbers of a Game of 24, or the text given."""
    if numbers is not None:
        if not isinstance(numbers, list) or not numbers or not all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
            raise invalid(f"numbers must be a list of whole numbers (0 or more), got {json.dumps(numbers)[:100]}")
        return game24_problem(numbers)
    if isinstance(problem, str) and problem.strip():
        return problem.strip()
    raise invalid("the run gives no problem: its input needs `numbers` (e.g. [4, 9, 10, 13]) or `problem` (a text)")


def game24_problem(numbers: list[int]) -> str:
    return " ".join(str(n) for n in numbers)


def invalid(message: str) -> NodeFailure:
    return NodeFailure(message, code="INVALID_INPUT", retryable=False)


# -- calling the roles --------------------------------------------------------------------


class RoleCalls:
    """The role callables of one search, and what they cost: tokens, backends, prompts."""

    def __init__(self, run: NodeRun, node, agents: dict[str, Agent]):
        self.run, self.node, self.agents = run, node, agents
        self.tokens_in = self.tokens_out = 0
        self.backends: dict[str, None] = {}
        self.models: dict[str, None] = {}
        self.prompts: list[str] = []
        self.prompt_chars = 0
        self.current = ""

    def roles(self) -> dict[str, Callable[[dict], Any]]:
        return {role: self._caller(role) for role in ROLES}

    def _caller(self, role: str) -> Callable[[dict], Any]:
        agent = self.agents[role]

        def call(message: dict) -> Any:
            self.current = f"{role} ({agent.agent_id})"
            prompt = role_prompt(agent, message)
            self._keep_prompt(f"=== {role}: {message.get('type')} ===\n{prompt}")
            request = BackendRequest(
                agent_id=agent.agent_id, skills=skills(agent), required_skills=skills(agent),
                system_prompt=(agent.prompt_config or {}).get("system_prompt", ""), prompt=prompt,
                inputs={"message": message}, execution_input=dict(self.run.execution.input),
                node_id=self.node.node_id, execution_id=self.run.execution.execution_id, attempt=self.run.attempt,
                model=agent.model, max_output_tokens=agent.max_output_tokens, encoding=agent.token_encoding,
            )
            try:
                with calling(f"tot {role}"):
                    response = get_backend(agent.backend).complete(request)
            except BackendError as error:
                if role == "evaluator" and error.code == "TIMEOUT":
                    raise TimeoutError(str(error)) from None  # the search's EVALUATION_TIMEOUT
                raise
            self.tokens_in += response.tokens_in
            self.tokens_out += response.tokens_out
            self.backends[response.backend] = None
            self.models[response.model] = None
            return as_reply(response.output, message, role)

        return call

    def _keep_prompt(self, prompt: str) -> None:
        if self.prompt_chars < PROMPT_LIMIT:
            self.prompts.append(prompt)
            self.prompt_chars += len(prompt)

    def record(self) -> dict:
        """The node run's fields: backends and models of the roles, tokens over every call,
        the prompts sent (bounded)."""
        return {
            "backend": ", ".join(self.backends or dict.fromkeys(a.backend for a in self.agents.values()))[:50],
            "model": ", ".join(m for m in self.models if m)[:200],
            "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
            "prompt": "\n\n".join(self.prompts)[:PROMPT_LIMIT],
        }


def role_prompt(agent: Agent, message: dict) -> str:
    """What a model reads: the role's instructions, the message as JSON, and the reply asked for."""
    sections = [(item["name"], item["content"]) for item in prompt_items(agent) if item["name"] != "system_prompt"]
    sections.append(("message", json.dumps(message, ensure_ascii=False, indent=1)))
    expected = REPLY_TYPES.get(message.get("type", ""), "")
    if expected:
        sections.append(("reply", (
            f"Reply with one JSON object and nothing else: the `{expected}` message, "
            f'{{"from": "{message.get("to", "")}", "to": "{message.get("from", "")}", "type": "{expected}", '
            f'"payload": {{...}}, "task_id": "{message.get("task_id", "")}"}}.')))
    return "\n\n".join(f"## {name}\n{text}" for name, text in sections)


def as_reply(output: Any, request: dict, role: str) -> dict:
    """The reply in the seed's base shape. A model may answer with the whole message, or
    without its envelope (from, to, task_id), or with the payload alone: the envelope is
    filled in from the request, and the engine's check_reply judges the rest. A reply that
    is no JSON object at all (text, a list) is an INVALID_FORMAT here."""
    if not isinstance(output, dict) or set(output) == {"text"}:  # parse_reply's {"text"}: not JSON
        text = str(output["text"]) if isinstance(output, dict) else json.dumps(output, ensure_ascii=False)
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise ToTError(INVALID_FORMAT, f"the {role}'s reply is not a JSON object: {shown!r}", recoverable=True)
    envelope = {"from": role, "to": request.get("from"), "type": REPLY_TYPES.get(request.get("type", ""), ""),
                "task_id": request.get("task_id")}
    if "payload" in output:
        return {**envelope, **output}
    return {**envelope, **{key: output[key] for key in ENVELOPE if key in output},
            "payload": {key: value for key, value in output.items() if key not in ENVELOPE}}


class TotKind(WorkerKind):
    """The node's agent orchestrates a Tree-of-Thoughts search, its roles played by other agents."""

    name = "tot"
    perform = staticmethod(perform_search)


KIND = TotKind()
