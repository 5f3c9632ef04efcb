"""A node's context plan: what a run of the node would pass, decided before it runs.

`node_context_plan` follows `executions.node_kinds.llm.perform` up to the backend call — the
agent's prompt items, the node's named inputs, the compression of its dependencies, the
context builder over real files, rows and outputs — and stops there. It never calls a
model and writes nothing:

1. outputs are the ones given, or the latest successful ones of the workflow's most
   recent run, a node tried alone aside (with that run's input and state, unless given);
2. an abstractive summary is made extractively, and the call a run would make is counted;
3. dependencies are compressed extractively, with the shared cache read but never
   written (an extractive text must not stand in for a model's later on);
4. a reference's retries happen at once, and the delays a run would wait are added up;
5. a reference whose handling aborts the node gives outcome `would_abort` and its
   failures, not an error: the plan says what would go wrong; instructions too large for
   the agent's limit (INSTRUCTIONS_EXCEED_CONTEXT) are a DocumentError naming the code.
"""
from __future__ import annotations

from typing import Any

from agents.backends import BackendError
from agents.backends.metering import units, usd
from agents.catalogue import model_entry
from core.errors import DocumentError, NotFound
from engine import compression
from engine.context.messages import MessageError
from engine.context.resolution import ResolutionAborted
from engine.context.trimming import InstructionsTooLarge
from engine.errors import EngineError
from engine.tokens import TokenCounter, UnknownEncoding, check_encoding
from executions.compression import COMPRESSION_CACHE, as_text, compress_model_called
from executions.context import context_builder, outputs_from
from executions.output_readers import latest_outputs, named_inputs, needed_outputs
from executions.prompts import bounded, prompt_items, render_prompt
from executions.services import workflow_graph

NOT_CALLED = "a plan never calls the model"


class ModelNotCalled(EngineError):
    """What the abstractive summariser raises in a plan: the builder then summarises extractively."""

    code = "MODEL_NOT_CALLED"


class _ReadOnlyCache:
    """The compression cache as a plan sees it: hits are real, writes are dropped."""

    def __init__(self, cache):
        self.cache = cache

    def get(self, key: str) -> str | None:
        return self.cache.get(key)

    def set(self, key: str, value: str) -> None:
        pass


class _Skipped:
    """What a run would ask of the model, or wait for, that the plan does not."""

    def __init__(self):
        self.calls = {"abstractive_summary": 0, "compression": 0}
        self.wait_seconds = 0.0

    def abstractive(self, text: str, target_tokens: int) -> str:
        self.calls["abstractive_summary"] += 1
        raise ModelNotCalled(NOT_CALLED)

    def wait(self, seconds: float) -> None:
        self.wait_seconds += seconds


def node_context_plan(*, workflow, node_id: str, outputs: dict[str, Any] | None = None,
                      input: dict[str, Any] | None = None, state: dict[str, Any] | None = None) -> dict[str, Any]:
    """The context a run of `node_id` would get: the §7.2 record, resolved inputs, failures, batches, budget."""
    graph = workflow_graph(workflow)
    node = graph.nodes.get(node_id)
    if node is None:
        raise NotFound(f"workflow '{workflow.workflow_id}' has no node '{node_id}'",
                       details={"workflow_id": workflow.workflow_id, "node_id": node_id})
    agent = graph.agents[node.agent_id]
    execution = workflow.executions.filter(trial=False).order_by("-created_at", "-id").first()
    if outputs is None:
        outputs = latest_outputs(execution, needed_outputs(node, graph.plan)) if execution else {}
        outputs_from_execution = execution.execution_id if execution else None
    else:
        for key in outputs:
            if key not in graph.nodes:
                raise DocumentError(f"'{key}' is not a node of workflow '{workflow.workflow_id}'", where=f"outputs.{key}")
        outputs_from_execution = None
    if input is None:
        input = execution.input if execution else {}
    if state is None:
        state = execution.state if execution else {}

    try:
        encoding = check_encoding(agent.token_encoding)
    except UnknownEncoding as error:  # a run would fail with its code: say why
        raise DocumentError(f"node '{node.node_id}' cannot run: {error.code}: {agent.agent_id}'s tokens cannot be "
                            f"counted: {error}", where=f"nodes[{node.node_id}]") from None
    skipped = _Skipped()
    references = list(node.input_mapping.get("data_references", []))
    named, missing = named_inputs(node, {"input": input, "state": state, "nodes": outputs})
    items = prompt_items(agent) + named
    compressed = None
    if node.compress:
        items, references, compressed = _compress_dependencies(node, graph.plan, outputs, references, items, agent, skipped)
    messages = [{"kind": "state", "data": state}] if state else []

    # executions.context.assemble_node_context, with the resolver's waits counted rather than slept.
    builder = context_builder(limits=agent.context_limits, encoding=encoding,
                              task_output=outputs_from(outputs), abstractive=skipped.abstractive)
    builder.resolver.sleep = skipped.wait
    plan: dict[str, Any] = {
        "workflow_id": workflow.workflow_id, "node_id": node.node_id, "agent_ref": agent.agent_id,
        "backend": agent.backend, "model": agent.model or "", "outputs_from": outputs_from_execution,
        "limits": agent.context_limits.as_dict(), "compression": compressed,
    }
    try:
        assembly = builder.assemble(task_id=node.node_id, references=references,
                                    transfer_config=node.input_mapping.get("transfer_config"),
                                    items=items, messages=messages)
    except ResolutionAborted as aborted:
        plan.update(outcome="would_abort", context_management=None, resolved_inputs=[],
                    resolution_failures=missing + aborted.failures, batch_count=0)
    except InstructionsTooLarge as error:  # a run would fail with its code: say why
        raise DocumentError(f"node '{node.node_id}' cannot run: {error.code}: {error}",
                            where=f"nodes[{node.node_id}]") from None
    except MessageError as error:  # the state, passed as a data message
        raise DocumentError(f"cannot be passed as a data message: {error}", where="state") from None
    except (ValueError, TypeError) as error:
        # The shape lets a reference's summary_config and batch_config hold anything, so a
        # value of the wrong kind (batch_size_tokens "x", an unknown strategy) shows here; a
        # run of the node would fail the same way.
        raise DocumentError(f"the context of node '{node.node_id}' cannot be assembled: {error}",
                            where=f"nodes[{node.node_id}].input_mapping") from None
    except RecursionError:
        # Paths and data are capped where they come in, but a plan is open to every viewer:
        # whatever still nests beyond Python's stack is their bad input, never a crash.
        raise DocumentError(f"the context of node '{node.node_id}' cannot be assembled: what it reads is nested "
                            "too deeply", where=f"nodes[{node.node_id}].input_mapping") from None
    else:
        plan.update(outcome="ready", context_management=assembly.record,
                    resolved_inputs=[bounded(report.as_dict()) for report in assembly.inputs],
                    resolution_failures=missing + assembly.failures, batch_count=assembly.batch_count)
    plan["cost_estimate"] = _cost_estimate(agent, assembly if plan["outcome"] == "ready" else None)
    plan["model_calls_skipped"] = _model_calls(plan["batch_count"], skipped, agent, node)
    plan["waits_skipped_seconds"] = skipped.wait_seconds
    return plan


def _compress_dependencies(node, plan, outputs, references, items, agent, skipped: _Skipped):
    """`executions.compression.compress_dependencies`, with the extractive compressor and a
    cache that is read, never written."""
    counter = TokenCounter(agent.token_encoding)
    extractive = compression.extractive_compressor(counter)

    def compressor(text: str, ratio: float, model: str) -> str:
        if agent.backend != "builtin":
            skipped.calls["compression"] += 1
        return extractive(text, ratio, model)

    texts = {dep: as_text(outputs[dep]) for dep in plan.dependencies(node.node_id) if dep in outputs}
    result = compression.compress_dependencies(
        texts, ratio=node.compress_ratio, model=node.compress_model, cache=_ReadOnlyCache(COMPRESSION_CACHE),
        compressor=compressor, counter=counter, model_called=_model_called(agent, node),
    )
    remaining = [ref for ref in references if not (ref["ref_type"] == "task_output" and ref["task_id"] in texts)]
    items = items + [{"name": "compressed_dependencies", "content": result.text, "priority": 1}]
    return items, remaining, result.record()


def _cost_estimate(agent, assembly) -> dict[str, Any]:
    """What the node's calls would cost at most: each batch's prompt as planned, counted here,
    and the most each call may write (an assumption the answer states), priced from the
    catalogue. Summaries and compressions a model would write are not in it."""
    entry = model_entry(agent.backend, agent.model)
    counter = TokenCounter(agent.token_encoding)
    system = (agent.prompt_config or {}).get("system_prompt", "")
    calls = assembly.batch_count if assembly else 0
    tokens_in = sum(counter.count(system) + counter.count(render_prompt(assembly.texts(call))) for call in range(calls))
    tokens_out = calls * agent.max_output_tokens
    cost = entry.cost(tokens_in, tokens_out)
    return {"backend": agent.backend, "model": entry.model, "calls": calls, "tokens_in": tokens_in,
            "tokens_out": tokens_out, "cost": None if cost is None else usd(units(cost)),
            "assumption": f"each call writes the most it may (max_output_tokens, {agent.max_output_tokens}): an upper "
                          "bound; summaries and compressions a model would write are not counted",
            "prices": entry.as_dict()}


def _model_calls(batch_count: int, skipped: _Skipped, agent, node) -> list[dict[str, Any]]:
    calls = [{"purpose": "completion", "calls": batch_count,
              "note": f"{agent.backend} would be asked once per batch; {NOT_CALLED}"}]
    if skipped.calls["abstractive_summary"]:
        calls.append({"purpose": "abstractive_summary", "calls": skipped.calls["abstractive_summary"],
                      "note": "summary_config asks for abstractive summaries; the plan's are extractive"})
    if skipped.calls["compression"]:
        calls.append({"purpose": "compression", "calls": skipped.calls["compression"],
                      "note": f"{agent.backend} would compress with the model '{_model_called(agent, node)}' "
                              f"(compress_model '{node.compress_model}'); the plan's compression is extractive"})
    return calls


def _model_called(agent, node) -> str | None:
    """The model a run's compression would call; None when the agent's backend is not
    configured (the plan still shows the rest)."""
    try:
        return compress_model_called(agent, node.compress_model)
    except BackendError:
        return None
