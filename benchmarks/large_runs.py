"""Large runs written straight into the database, for measuring the pages and the API at scale.

`manage.py benchmark_pages` and the pages-at-scale tests ("a run of 100,000 node runs opens in
under a second") need runs far larger than a test can execute. These functions write them
as the workers would have left them, with plain bulk inserts (no `COPY`), so that they work
on SQLite and PostgreSQL alike:

- `loop_workflow_create` imports a state machine of six nodes looping without a gate, on
  builtin agents, with `max_steps` high enough for the runs below;
- `large_run_create` writes one finished run of that workflow with N node runs, each a
  realistic record: sizes as a model-backed node leaves them (a prompt of about 1.5 KB,
  resolved inputs and a §7.2 context record of about 1 KB each, an output of about 0.5 KB),
  a few failed attempts each followed by a retry, consecutive times of 50–400 ms, tokens,
  and a priced call (the records name an OpenAI-compatible model so that the pages have
  costs to show; the agents themselves stay builtin so the workflow is runnable offline);
- `light_executions_create` writes many small runs of a few node runs each, for the list
  of executions.

Nothing is random from run to run: a seeded generator makes the same records every time.
"""
from __future__ import annotations

import random
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from agents.backends.metering import usd
from agents.models import Agent, AgentVersion
from core.documents import import_documents
from executions.models import Execution, NodeRun
from workflows.models import Workflow, WorkflowVersion

BATCH = 2_000  # rows per INSERT
LOOP = ("plan", "research", "draft", "review", "revise", "check")  # the nodes, in the order the loop runs them
BACKEND, MODEL = "openai", "gpt-4o-mini"
# What one token costs the records' model, in units of 10⁻¹² USD (0.15 and 0.60 USD per million).
COST_IN, COST_OUT = 150_000, 600_000
FAILURE_EVERY = 97  # about one attempt in a hundred fails (and is retried)
ERROR_CODES = ("BACKEND_ERROR", "NODE_TIME_LIMIT", "BUDGET_EXCEEDED")
# The status of a light run's last node run, by the run's status.
LAST_RUN_STATUS: dict[str, str] = {
    Execution.Status.SUCCESS: NodeRun.Status.SUCCESS, Execution.Status.FAILED: NodeRun.Status.FAILED,
    Execution.Status.CANCELLED: NodeRun.Status.CANCELLED, Execution.Status.RUNNING: NodeRun.Status.RUNNING,
}
PARAGRAPH = ("The release notes list what users will notice first, then fixes grouped by area, then the changes "
             "that need an action from operators. Each item names the pull request it comes from and says in one "
             "line why it matters. ")


def loop_workflow_create(*, workflow_id: str = "large_loop", actor: str = "large_runs") -> Workflow:
    """A state machine of the six LOOP nodes, each on a builtin agent of its own, that goes
    round for as long as `max_steps` allows: what a run of 100,000 node runs looks like."""
    agents = [{
        "agent_id": f"{workflow_id}_{node_id}",
        "name": f"{node_id.title()} ({workflow_id})",
        "version": "1.0.0",
        "type": "business",
        "status": "active",
        "prompt_config": {"system_prompt": f"You {node_id} the release notes."},
        "capabilities": {"skills": ["noop"], "tools": [], "knowledge_domains": []},
        "metadata": {"created_by": actor},
        "runtime": {"backend": "builtin", "model": "", "encoding": "cl100k_base", "role": ""},
    } for node_id in LOOP]
    workflow = {
        "workflow_id": workflow_id,
        "name": f"Loop of {len(LOOP)} nodes ({workflow_id})",
        "topology": "state_machine",
        "nodes": [{"id": node_id, "agent_ref": f"{workflow_id}_{node_id}"} for node_id in LOOP],
        "transitions": [{"from": node_id, "to": LOOP[(i + 1) % len(LOOP)]} for i, node_id in enumerate(LOOP)],
        "error_handling": {"retry_count": 2},
        "limits": {"max_steps": 100_000, "max_wall_seconds": 86_400},
    }
    import_documents([*agents, workflow], actor=actor)
    return Workflow.objects.get(workflow_id=workflow_id)


def large_run_create(*, workflow: Workflow, node_runs: int, execution_id: str | None = None,
                     batch_size: int = BATCH) -> Execution:
    """One finished run of `workflow` (made by `loop_workflow_create`) with `node_runs` node
    runs, written in batches of `batch_size` rows, in one transaction."""
    rng = random.Random(node_runs)
    agents = _agents_by_node(workflow)
    durations = [rng.randint(50, 400) for _ in range(node_runs)]
    started = timezone.now() - timedelta(milliseconds=sum(durations) + 5 * node_runs)
    with transaction.atomic():
        execution = Execution.objects.create(
            execution_id=execution_id or f"{workflow.workflow_id}_{node_runs}",
            workflow=workflow, workflow_version=_latest_version(workflow), status=Execution.Status.SUCCESS,
            input={"topic": "release 4.2", "repository": "acme/switchyard"},
            state={"draft": PARAGRAPH, "rounds": node_runs // len(LOOP)},
            started_at=started, created_at=started, updated_at=started)
        batch: list[NodeRun] = []
        cost = 0
        at, position, attempt = started, 0, 1
        for sequence in range(1, node_runs + 1):
            failed = sequence % FAILURE_EVERY == 0 and sequence < node_runs
            run = _node_run(execution, agents, sequence, LOOP[position], attempt, failed, at, durations[sequence - 1],
                            rng)
            cost += run.cost
            batch.append(run)
            at += timedelta(milliseconds=durations[sequence - 1] + rng.randint(1, 9))  # a few ms after it completed
            if failed:
                attempt += 1  # the same node again, as a retry
            else:
                position, attempt = (position + 1) % len(LOOP), 1
            if len(batch) == batch_size:
                NodeRun.objects.bulk_create(batch)
                batch = []
        NodeRun.objects.bulk_create(batch)
        Execution.objects.filter(pk=execution.pk).update(completed_at=at, updated_at=at, cost=cost)
    execution.refresh_from_db()
    return execution


def light_executions_create(*, workflows: list[Workflow], count: int, node_runs_each: int = 3,
                            ending: datetime | None = None, batch_size: int = BATCH) -> None:
    """`count` small runs for the list of executions, one a minute, the newest created at
    `ending` (by default now): mostly successes, some failed or cancelled, a few still
    running; the workflows taken in turn, the first three times as often as each other;
    `node_runs_each` short node runs each."""
    rng = random.Random(count)
    statuses = [Execution.Status.SUCCESS] * 16 + [Execution.Status.FAILED] * 2 + [
        Execution.Status.CANCELLED, Execution.Status.RUNNING]
    turns = [workflows[0]] * 3 + list(workflows[1:])
    agents = {workflow.pk: _agents_by_node(workflow) for workflow in workflows}
    versions = {workflow.pk: _latest_version(workflow) for workflow in workflows}
    first = (ending or timezone.now()) - timedelta(minutes=count - 1)
    with transaction.atomic():
        for offset in range(0, count, batch_size):
            executions = []
            for n in range(offset, min(count, offset + batch_size)):
                workflow, status = turns[n % len(turns)], rng.choice(statuses)
                created = first + timedelta(minutes=n)
                executions.append(Execution(
                    execution_id=f"{workflow.workflow_id}_run_{n:07d}", workflow=workflow,
                    workflow_version=versions[workflow.pk], status=status, input={"topic": f"release {n}"},
                    started_at=created, completed_at=None if status == Execution.Status.RUNNING else
                    created + timedelta(seconds=rng.randint(2, 90)),
                    ended_reason="BACKEND_ERROR: the model did not answer" if status == Execution.Status.FAILED else "",
                    created_at=created, updated_at=created, cost=rng.randint(0, 5_000_000_000)))
            Execution.objects.bulk_create(executions)
            runs = []
            for execution in executions:
                for sequence in range(1, node_runs_each + 1):
                    node_id = LOOP[(sequence - 1) % len(LOOP)]
                    agent, version = agents[execution.workflow_id][node_id]
                    # The last node run ended as its run did (or still runs); those before it succeeded.
                    run_status = (LAST_RUN_STATUS[execution.status] if sequence == node_runs_each
                                  else NodeRun.Status.SUCCESS)
                    running = run_status == NodeRun.Status.RUNNING
                    assert execution.started_at is not None, "made above with its start"
                    began = execution.started_at + timedelta(seconds=sequence)
                    runs.append(NodeRun(
                        execution=execution, node_id=node_id, agent=agent, agent_version=version, status=run_status,
                        sequence=sequence, started_at=began,
                        completed_at=None if running else began + timedelta(milliseconds=200),
                        duration_ms=None if running else 200,
                        error_code="BACKEND_ERROR" if run_status == NodeRun.Status.FAILED else "",
                        backend=BACKEND, model=MODEL, tokens_in=120, tokens_out=40,
                        output={"text": f"{node_id} {sequence}"} if run_status == NodeRun.Status.SUCCESS else None))
            NodeRun.objects.bulk_create(runs, batch_size=batch_size)


# -- one node run ------------------------------------------------------------------------------


def _node_run(execution: Execution, agents: dict[str, tuple[Agent, AgentVersion | None]], sequence: int,
              node_id: str, attempt: int, failed: bool, started: datetime, duration_ms: int,
              rng: random.Random) -> NodeRun:
    agent, version = agents[node_id]
    tokens_in, tokens_out = rng.randint(300, 600), 0 if failed else rng.randint(80, 200)
    cost = tokens_in * COST_IN + tokens_out * COST_OUT
    following = LOOP[(LOOP.index(node_id) + 1) % len(LOOP)]
    round_number = (sequence - 1) // len(LOOP) + 1
    return NodeRun(
        execution=execution, node_id=node_id, agent=agent, agent_version=version,
        status=NodeRun.Status.FAILED if failed else NodeRun.Status.SUCCESS,
        kind=NodeRun.Kind.FIRST if attempt == 1 else NodeRun.Kind.RETRY, attempt=attempt, sequence=sequence,
        error_code=ERROR_CODES[sequence % len(ERROR_CODES)] if failed else "",
        error="the model did not answer within 60 s" if failed else "",
        dispatches=1, duration_ms=duration_ms, started_at=started,
        completed_at=started + timedelta(milliseconds=duration_ms), worker=f"w{sequence % 4}@switchyard",
        heartbeat_at=started, backend=BACKEND, model=MODEL, tokens_in=tokens_in, tokens_out=tokens_out,
        prompt=_prompt(node_id, round_number), resolved_inputs=_resolved_inputs(node_id, round_number),
        context_record=_context_record(node_id, tokens_in), resolution_failures=[],
        output=None if failed else {"text": f"Round {round_number} of {node_id}. " + PARAGRAPH * 2,
                                    "round": round_number, "verdict": "revise"},
        decision=None if failed else {
            "action": "node", "node_id": following, "transition": LOOP.index(node_id), "condition": None,
            "condition_value": True, "evaluated": [{"transition": LOOP.index(node_id), "condition": None,
                                                    "value": True}]},
        calls=[{"purpose": "node", "backend": BACKEND, "model": MODEL, "tokens_in": tokens_in,
                "tokens_out": tokens_out, "cached_in": 0, "usage": "reported", "cost": usd(cost)}],
        cost=cost)


def _prompt(node_id: str, round_number: int) -> str:
    return (f"## task_instructions\nYou {node_id} the release notes: round {round_number}.\nWork step by step and "
            f"state what you relied on.\nReply with one JSON object.\n\n## draft\n{PARAGRAPH * 5}\n\n## state\n"
            f'{{"kind": "state", "data": {{"rounds": {round_number}, "feedback": "{PARAGRAPH.strip()}"}}}}')


def _resolved_inputs(node_id: str, round_number: int) -> list[dict]:
    def item(name: str, data_type: str, tokens: int, content, source: dict) -> dict:
        return {"name": name, "source": source, "data_type": data_type, "priority": 1,
                "resolved_at": "before_scheduling", "resolved_tokens": tokens, "transfer_mode": "full",
                "reason": "inline item: passed whole", "passed": True, "passed_tokens": tokens, "batches": 0,
                "cap": None, "content": content}

    return [
        item("system_prompt", "system_prompt", 8, f"You {node_id} the release notes.", {"inline": True}),
        item("task_instructions", "instructions", 24, "Work step by step and state what you relied on.\n"
             "Reply with one JSON object.", {"inline": True}),
        item("draft", "text", 60, PARAGRAPH, {"inline": True}),
        item("state", "data_message", 40, {"kind": "state", "data": {"rounds": round_number}},
             {"data_message": True}),
    ]


def _context_record(node_id: str, tokens: int) -> dict:
    """The §7.2 `context_management` record, in the shape the engine stores it."""
    inputs = {
        "system_prompt": (8, "system_prompt"), "task_instructions": (24, "instructions"),
        "draft": (60, "text"), "state": (40, "data_message"), "review": (tokens - 132, "text"),
    }
    return {
        "task_id": node_id,
        "total_input_data": {name: {"tokens": n, "priority": 1, "data_type": data_type, "transfer_mode": "full",
                                    "passed_tokens": n} for name, (n, data_type) in inputs.items()},
        "total_tokens": tokens, "context_limit": 82_800, "overflow": 0,
        "limits": {"max_input_tokens": 100_000, "max_output_tokens": 16_000, "reserved_for_system_prompt": 5_000,
                   "reserved_for_instructions": 3_000, "safety_margin": 0.9, "data_area": None,
                   "available_for_data": 92_000, "effective_data_limit": 82_800, "data_limit": 82_800},
        "resolution": {"strategy": "none", "actions": [], "final_tokens": tokens, "within_limit": True},
    }


def _agents_by_node(workflow: Workflow) -> dict[str, tuple[Agent, AgentVersion | None]]:
    """Each node's agent and its latest version, read once."""
    agents = {agent.agent_id: agent for agent in Agent.objects.filter(
        agent_id__in=[f"{workflow.workflow_id}_{node_id}" for node_id in LOOP])}
    by_node = {}
    for node_id in LOOP:
        agent = agents[f"{workflow.workflow_id}_{node_id}"]
        by_node[node_id] = (agent, AgentVersion.objects.filter(agent=agent).order_by("-pk").first())
    return by_node


def _latest_version(workflow: Workflow) -> WorkflowVersion | None:
    return WorkflowVersion.objects.filter(workflow=workflow).order_by("-number").first()
