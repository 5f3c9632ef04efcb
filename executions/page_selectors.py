"""Reads for the execution pages (the list, a run's inspection page, a node's plan) and
the evaluation pages (an evaluation explained: each score's formula and figures).

The inspection page is rendered from a fixed number of queries, in a time that does not
grow faster than the run's index entries, whatever the number of node runs: the graph's
colours and the counts come from the run's summary (`run_summary.node_summary`), and the
table of node runs is one page, without the heavy fields (prompts, context records).
Everything else the page shows is read by its script from the API, a window at a time.
"""
from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

from django.db.models import Case, F, Q, QuerySet, Value, When

from agents.backends.metering import usd
from agents.models import Agent
from engine import gates as person_gates
from engine.dataflow import ALL, outputs_read
from engine.replay import descendants
from engine.scheduling import Plan
from engine.validation import dependency_edges
from executions.models import Evaluation, Execution, NodeRun, ThoughtSearch
from executions.node_kinds import chosen
from executions.selectors import listed_runs, run_evaluation
from workflows.models import Workflow, WorkflowVersion
from workflows.selectors import ID_PATTERN

DONE = ("success", "skipped")
ACTIVE = ("pending", "running", "escalated", "waiting")  # waiting: nothing left but gates open for people
PREVIEW_CHARS = 160
# What the table of node runs does not read: the panel gets them from the API.
HEAVY_FIELDS = ("prompt", "resolved_inputs", "context_record", "compression", "resolution_failures", "decision")
# How the list may be ordered (`?sort=`): newest first by default, or by what the runs cost,
# the newest first among runs that cost the same.
LIST_ORDERS = {
    "": ("-created_at", "-id"),
    "cost": ("cost", "-created_at", "-id"),
    "-cost": ("-cost", "-created_at", "-id"),
}


def executions_for_list(*, workflow: str = "", status: str = "", since=None, until=None,
                        sort: str = "", experiment: str = "", with_experiments: bool = False) -> QuerySet[Execution]:
    """Runs, newest first or ordered by cost (`sort`: one of LIST_ORDERS); their node runs
    are counted a page at a time (`selectors.node_run_counts`). Experiments' runs only when
    asked for (`selectors.listed_runs`)."""
    executions = (listed_runs(Execution.objects.filter(trial=False), experiment=experiment,
                              with_experiments=with_experiments)
                  .select_related("workflow").order_by(*LIST_ORDERS.get(sort, LIST_ORDERS[""])))
    if workflow:
        executions = executions.filter(workflow__workflow_id=workflow)
    if status:
        executions = executions.filter(status=status)
    if since:
        executions = executions.filter(created_at__date__gte=since)
    if until:
        executions = executions.filter(created_at__date__lte=until)
    return executions


def workflow_choices() -> list[tuple[str, str]]:
    return list(Workflow.objects.order_by("workflow_id").values_list("workflow_id", "name"))


def workflow_graph(workflow: Workflow, version_id: int | None = None) -> dict[str, Any]:
    """The workflow as the page draws it: nodes (with their agent and saved layout, the
    `shape` their kind is drawn as (executions/node_kinds: "agent", "gate", "workflow"),
    whether each is a gate, a person's step: `gates` has their settings, and for a
    sub-workflow node the workflow it runs: `subworkflow`) and edges — the
    order of a chain, transitions with their conditions, and the task outputs a node reads
    (`data` edges), each pair once. With `version_id`, the graph of that version
    (a run's page draws the version the run ran); two queries either way."""
    number = None
    nodes: list[dict[str, Any]]
    transitions: list[dict[str, Any]]
    if version_id is None:
        topology = workflow.topology
        nodes = [{"id": node["node_id"], "agent": node["agent__agent_id"], "agent_name": node["agent__name"],
                  "layout": node["layout"], "compress": node["compress"], "input_mapping": node["input_mapping"] or {},
                  "gate": node["gate"], "subworkflow": node["subworkflow"]}
                 for node in workflow.nodes.order_by("position", "id").values(
                     "node_id", "agent__agent_id", "agent__name", "layout", "compress", "input_mapping", "gate",
                     "subworkflow")]
        transitions = [{"from": t["from_node"], "to": t["to_node"], "condition": t["condition"],
                        "on_failure": t["on_failure"]}
                       for t in workflow.transitions.order_by("position", "id").values(
                           "from_node", "to_node", "condition", "on_failure")]
    else:
        number, document = WorkflowVersion.objects.values_list("number", "document").get(pk=version_id)
        topology, transitions = document["topology"], document.get("transitions", [])
        names = dict(Agent.objects.filter(agent_id__in={node["agent_ref"] for node in document["nodes"]})
                     .values_list("agent_id", "name"))
        nodes = [{"id": node["id"], "agent": node["agent_ref"], "agent_name": names.get(node["agent_ref"], ""),
                  "layout": node.get("layout"), "compress": node.get("compress", False),
                  "input_mapping": node.get("input_mapping") or {}, "gate": node.get("gate"),
                  "subworkflow": node.get("subworkflow")}
                 for node in document["nodes"]]
    ids = [node["id"] for node in nodes]
    edges: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()

    def add(source: str, target: str, kind: str, **extra) -> None:
        if source in ids and target in ids and (source, target) not in seen:
            seen.add((source, target))
            edges.append({"source": source, "target": target, "kind": kind, **extra})

    if topology == Workflow.Topology.SEQ:
        for source, target in pairwise(ids):
            add(source, target, "sequence")
    for transition in transitions:
        add(transition["from"], transition["to"], "transition", condition=transition.get("condition") or "",
            on_failure=transition.get("on_failure") or "")
    for source, target in dependency_edges({"nodes": nodes, "transitions": []}):
        dependency = topology == Workflow.Topology.DAG
        add(source, target, "dependency" if dependency else "data")
    for node in nodes:  # named inputs over $.nodes.<id>: read, never waited for
        for source in sorted(outputs_read(node) - {ALL}):
            add(source, node["id"], "data")
    return {
        "workflow_id": workflow.workflow_id,
        "version": number,
        "topology": topology,
        "nodes": [drawn_node(node) for node in nodes],
        "edges": edges,
        # The gates (engine/gates.py), as this version sets them: node id → the gate's settings.
        "gates": {node["id"]: person_gates.settings_of(node["gate"]) for node in nodes if node["gate"] is not None},
    }


def drawn_node(node: dict[str, Any]) -> dict[str, Any]:
    """A node as the graph draws it: its shape is its kind's (`node_kinds.chosen`, the one
    place a node's kind is told from its fields), and a sub-workflow node names the workflow
    (and version: None, the latest when the child starts) it runs."""
    child = node["subworkflow"]
    return {**{key: node[key] for key in ("id", "agent", "agent_name", "layout", "compress")},
            "gate": node["gate"] is not None,
            "shape": chosen(gate=node["gate"], subworkflow=child).shape,
            "subworkflow": None if child is None else {"workflow_ref": child["workflow_ref"],
                                                       "version": child.get("version")}}


def gate_deciders(graph: dict[str, Any], username: str, roles: list[str]) -> dict[str, dict[str, Any]]:
    """For each gate of the graph a page draws: who may decide it, as a person reads it, and
    whether the user (`username`, holding `roles`) may: the page offers the form only then
    (the API checks again)."""
    return {node_id: {"deciders": person_gates.deciders_text(gate),
                      "may_decide": person_gates.may_decide(gate, username, roles)}
            for node_id, gate in graph["gates"].items()}


# The re-runs a run's page lists, newest first; it says when there are more.
RERUNS_SHOWN = 20


def execution_with_reruns(execution_id: str) -> tuple[Execution | None, list[Execution], bool]:
    """A run (with its workflow, the run it was re-run from, and for a child run the
    sub-workflow node's run that started it, with its run), its newest re-runs, and
    whether it has more than those: one query, the run's row and its re-runs' rows together
    (the run first), so that the page costs no more queries for being a re-run, a child run
    or having re-runs."""
    if not is_identifier(execution_id):
        return None, [], False
    rows: list[Execution] = list(Execution.objects.select_related("workflow", "rerun_of",
                                                                  "parent_node_run__execution")
                .filter(Q(execution_id=execution_id) | Q(rerun_of__execution_id=execution_id))
                .annotate(is_the_run=Case(When(execution_id=execution_id, then=Value(0)), default=Value(1)))
                .order_by("is_the_run", "-created_at", "-id")[:RERUNS_SHOWN + 2])
    if not rows:  # no such run (and so no re-run of it)
        return None, [], False
    reruns = rows[1:]
    return rows[0], reruns[:RERUNS_SHOWN], len(reruns) > RERUNS_SHOWN


def rerun_downstream(graph: dict[str, Any]) -> dict[str, list[str]]:
    """Each node's descendants as a re-run decides them (`engine.replay.descendants`): the
    nodes a re-run from it runs again after it, in a seq, par or dag, read from the page's
    drawing of the workflow (in a dag, its transition and dependency edges are the plan's).
    A state machine runs whatever its transitions choose after the step it starts at: {}."""
    if graph["topology"] == Workflow.Topology.STATE_MACHINE:
        return {}
    edges = [(edge["source"], edge["target"]) for edge in graph["edges"] if edge["kind"] in ("transition", "dependency")]
    plan = Plan(graph["topology"], [node["id"] for node in graph["nodes"]], edges)
    return {node_id: sorted(descendants(plan, node_id)) for node_id in plan.nodes}


def node_states(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each node's latest run (its status colours the graph) and how many runs it had,
    from the run's summary (`run_summary.node_summary`)."""
    return {node["node_id"]: {"status": node["latest"]["status"], "kind": node["latest"]["kind"],
                              "attempt": node["latest"]["attempt"], "runs": node["runs"]}
            for node in summary["nodes"]}


def progress(graph: dict[str, Any], states: dict[str, dict[str, Any]]) -> dict[str, int]:
    total = len(graph["nodes"])
    done = sum(1 for node in graph["nodes"] if states.get(node["id"], {}).get("status") in DONE)
    return {"done": done, "total": total, "percent": round(100 * done / total) if total else 0}


class TablePage:
    """A run's node runs for the paginator, in the order they were made and without the
    fields only the panel shows; their number is known already, so it slices them without
    counting. A page is read by its ids first, from an index, then its rows: a page far
    into a large run skips the runs before it in the index, not in the table."""

    def __init__(self, execution: Execution, total: int):
        self.execution, self.total = execution, total

    def count(self) -> int:
        return self.total

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, window: slice) -> list[NodeRun]:
        ids = list(self.execution.node_runs.order_by("sequence", "id").values_list("id", flat=True)[window])
        found = NodeRun.objects.select_related("agent").defer(*HEAVY_FIELDS).in_bulk(ids)
        return [found[pk] for pk in ids if pk in found]


def thought_searches(execution: Execution) -> QuerySet[ThoughtSearch]:
    """The run's Tree-of-Thoughts searches as its page lists them, each with the node, kind
    and attempt of the node run that made it (one query, read only if the page lists them;
    the trees and messages are left to the search's own page)."""
    return (execution.thought_searches.defer("tree", "messages")
            .annotate(run_node=F("node_run__node_id"), run_kind=F("node_run__kind"), run_attempt=F("node_run__attempt")))


def copy_text(progress: dict[str, int] | None) -> str:
    """How far a large re-run's copy of the node runs it reuses has got, as the run page
    says it ("" when none is under way); static/js/execution_detail.js writes the same."""
    if not progress:
        return ""
    return f"copying reused node runs: {progress['copied']:,} of {progress['of']:,}"


def cost_text(cost_units: int | None) -> str:
    """A cost in units of 10⁻¹² USD as the pages show it: exact, without the trailing zeros
    past the cents ("$0.00004815", "$1.50", "$0.00"); "" for None. static/js/cost.js writes
    the same."""
    text = usd(cost_units)  # None for None
    return "" if text is None else _usd_text(text)


def duration_ms_text(ms: float | None) -> str:
    """A duration as the pages show it: "420 ms", "3.2 s", "4 min 05 s", "2 h 03 min"; ""
    for None. static/js/budget.js's fmt.ms writes the same."""
    if ms is None:
        return ""
    seconds = max(0.0, ms / 1000)
    if seconds < 1:
        return f"{round(seconds * 1000)} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, whole = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {whole:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _usd_text(value: str) -> str:
    """A USD decimal string ("0.001500000000") as the pages write money ("$0.0015")."""
    whole, _, fraction = value.partition(".")
    return f"${whole}.{fraction.rstrip('0').ljust(2, '0')}"


def output_preview(output: Any, limit: int = PREVIEW_CHARS) -> str:
    """The start of an output as one line of text (the template escapes it)."""
    if output is None:
        return ""
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# The columns of the compare page's table: a node run's field, its heading.
COMPARED_COLUMNS = (("status", "Status"), ("kind", "Kind"), ("agent_version", "Agent version"),
                    ("tokens_in", "Tokens in"), ("tokens_out", "Tokens out"), ("duration_ms", "Duration (ms)"))


# The compare page's filter (`?verdict=`): its values and what the choice reads.
COMPARISON_FILTERS = {"not_same": "not the same", "differs": "differ", "only_a": "only in A", "only_b": "only in B",
                      "unverified": "unverified", "same": "the same"}


def comparison_rows(pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The compare page's table: one row per pair of node runs shown (each compared in
    full), each column's value in run a and run b (None for a run without it) and whether
    they differ; how many places of the output differ, and how many context decisions."""
    rows = []
    for pair in pairs:
        a, b = pair["a"] or {}, pair["b"] or {}
        decisions = [entry for key in ("inputs", "actions", "failures") for entry in pair[key] if entry["differs"]]
        rows.append({
            "index": pair["index"], "node_id": pair["node_id"], "round": pair["round"], "attempt": pair["attempt"],
            "verdict": pair["verdict"], "not_repeated": pair["not_repeated"], "in_a": bool(a), "in_b": bool(b),
            "differs": pair["differs"],
            "cells": [{"field": field, "label": label, "a": a.get(field), "b": b.get(field),
                       "differs": field in pair["changed"]} for field, label in COMPARED_COLUMNS],
            "output_differences": len(pair["output_diff"]), "output_truncated": pair["output_diff_truncated"],
            "decisions_differing": len(decisions),
        })
    return rows


def is_identifier(value: str) -> bool:
    """Whether `value` could be a stored id: one that cannot is not looked up (PostgreSQL
    refuses a NUL in a query outright)."""
    return bool(ID_PATTERN.match(value))


def workflow_node(workflow_id: str, node_id: str) -> tuple[Workflow, dict[str, Any]] | None:
    """The workflow and the node a plan is asked for (None when either does not exist)."""
    if not (is_identifier(workflow_id) and is_identifier(node_id)):
        return None
    workflow = Workflow.objects.filter(workflow_id=workflow_id).first()
    if workflow is None:
        return None
    node = (workflow.nodes.filter(node_id=node_id)
            .values("node_id", "agent__agent_id", "agent__name", "compress").first())
    if node is None:
        return None
    return workflow, dict(node)


# -- evaluations ------------------------------------------------------------------------------

GATE_LABELS = {"overall_score": "overall score"}
# The order scores are shown in. A JSON column may not keep the order keys were written in
# (PostgreSQL's jsonb sorts them by length), so pages put them back in this one.
SCORE_ORDER = ("accuracy", "completeness", "efficiency", "overall_score", "pass", "action")


def _in_score_order(mapping: dict) -> list[tuple[str, Any]]:
    rank = {name: index for index, name in enumerate(SCORE_ORDER)}
    return sorted(mapping.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0]))


def evaluation_for_page(evaluation_id: str) -> Evaluation | None:
    """One evaluation with the run it was computed from (None when there is no such id)."""
    if not is_identifier(evaluation_id):
        return None
    return Evaluation.objects.select_related("execution__workflow").filter(evaluation_id=evaluation_id).first()


def evaluations_averaged(evaluation: Evaluation) -> list[dict[str, Any]]:
    """The evaluations an aggregate is the mean of, in its order (newest first), one query;
    an id whose evaluation is gone since (its run was deleted) comes with `row` None."""
    ids = [value for value in _dict(evaluation.details).get("evaluations") or [] if isinstance(value, str)]
    if evaluation.method != Evaluation.Method.AGGREGATE or not ids:
        return []
    rows = Evaluation.objects.in_bulk(ids, field_name="evaluation_id")
    return [{"evaluation_id": value, "row": rows.get(value)} for value in ids]


def evaluations_of_same_run(evaluation: Evaluation) -> list[Evaluation]:
    """The other evaluations computed from the same run: the run's own and each agent's part."""
    if evaluation.execution_id is None or evaluation.method != Evaluation.Method.COMPUTED:
        return []
    return list(Evaluation.objects.filter(execution_id=evaluation.execution_id, method=Evaluation.Method.COMPUTED)
                .exclude(pk=evaluation.pk).order_by("target_type", "target_id"))


def execution_evaluation(execution: Execution) -> Evaluation | None:
    """The evaluation computed from a run when it ended (None until a worker has made it)."""
    return run_evaluation(execution).first()


def gate_summary(gate: Any) -> dict[str, Any] | None:
    """A quality gate's outcome as one line: "Quality gate failed: accuracy 0.50 < 0.80".

    Takes an execution's `quality_gate` ({passed, failed, run_failed, gate}) or an
    evaluation's `details["quality_gate"]` ({gate, failed, run_failed}); None when there is
    no gate. A run that failed never meets its gate."""
    gate = _dict(gate)
    minimums = {name: value for name, value in _in_score_order(_dict(gate.get("gate"))) if _number(value) is not None}
    if not gate or not minimums:
        return None
    # A failed score with no value was not measured: a gate is not passed on it.
    failed = [item for item in gate.get("failed") or [] if isinstance(item, dict)
              and (item.get("value") is None or _number(item.get("value")) is not None)
              and _number(item.get("minimum")) is not None]
    if failed or gate.get("run_failed") is True:
        parts = ["the run failed"] * (gate.get("run_failed") is True) + [
            f"{_label(item.get('score'))} not measured (minimum {_minimum(item['minimum'])})"
            if item.get("value") is None else
            f"{_label(item.get('score'))} {_below(item['value'], item['minimum'])} < {_minimum(item['minimum'])}"
            for item in failed]
        return {"passed": False, "text": "Quality gate failed: " + ", ".join(parts),
                "failed": [str(item.get("score")) for item in failed]}
    parts = [f"{_label(name)} ≥ {_minimum(value)}" for name, value in minimums.items()]
    return {"passed": True, "text": "Quality gate passed: " + ", ".join(parts), "failed": []}


def evaluation_explained(evaluation: Evaluation) -> dict[str, Any]:
    """What the evaluation page shows of `details`: each score's formula and the figures it
    used, with the arithmetic written out so a person can check it. Plain data; a shape it
    does not know (a manual evaluation's details are {}) gives no section rather than an error."""
    details = _dict(evaluation.details)
    formulas = {name: text for name, text in _in_score_order(_dict(details.get("formulas"))) if isinstance(text, str)}
    sections: dict[str, Any] = {}

    completeness = _dict(details.get("completeness"))
    if completeness:
        expected = _strings(completeness.get("expected"))
        completed = _strings(completeness.get("completed"))
        share = len(completed) / len(expected) if expected else 0.0
        sections["completeness"] = {
            "expected": expected, "completed": completed, "incomplete": _strings(completeness.get("incomplete")),
            "arithmetic": (f"{len(completed)} completed / {len(expected)} expected = {_figure(share)}"
                           if expected else "no node was expected: 0.00"),
        }

    accuracy = _dict(details.get("accuracy"))
    if accuracy:
        checks = [{"name": str(check.get("name", "")), "passed": check.get("passed") is True,
                   "node_id": str(check.get("node_id") or ""), "agent_id": str(check.get("agent_id") or ""),
                   "detail": str(check.get("detail") or "")}
                  for check in accuracy.get("checks") or [] if isinstance(check, dict)]
        judge = _dict(accuracy.get("judge")) or None
        judge_score = _number(judge.get("score")) if judge else None
        parts = []
        passed = sum(bool(check["passed"]) for check in checks)
        if checks:
            parts.append((f"{passed} of {len(checks)} checks passed", passed / len(checks)))
        if judge_score is not None:
            parts.append((f"the judge's {_figure(judge_score)}", judge_score))
        failed = accuracy.get("failed")
        if isinstance(failed, str) and failed:  # as engine.evaluation scores it: 0.0, whatever the checks
            arithmetic = f"{failed}: 0.00, whatever the checks"
        elif len(parts) == 2:
            arithmetic = (f"mean of {_figure(parts[0][1])} ({parts[0][0]}) and {parts[1][0]} = "
                          f"{_figure((parts[0][1] + parts[1][1]) / 2)}")
        elif parts:
            arithmetic = f"{parts[0][0]} = {_figure(parts[0][1])}"
        elif evaluation.accuracy is None:
            arithmetic = "nothing verifiable: not measured"
        else:  # scored before accuracy could be left unmeasured
            default = 0.0 if _strings(completeness.get("incomplete")) else 1.0
            arithmetic = f"nothing verifiable: {_figure(default)} by default (1.00 when every node completed, else 0.00)"
        sections["accuracy"] = {
            "checks": checks, "checks_passed": passed, "arithmetic": arithmetic,
            "judge": {"agent_id": str(judge.get("agent_id") or ""), "score": judge_score,
                      "feedback": _strings(judge.get("feedback"))} if judge else None,
            "judge_problem": str(accuracy.get("judge_problem") or ""),
            "unverified": accuracy.get("unverified") is True,
            "failed": failed if isinstance(failed, str) else "",
        }

    efficiency = _dict(details.get("efficiency"))
    if efficiency:
        used, budget = _number(efficiency.get("tokens_used")), _number(efficiency.get("token_budget"))
        elapsed, wall = _number(efficiency.get("elapsed_seconds")), _number(efficiency.get("wall_seconds"))
        tokens, time = _number(efficiency.get("token_efficiency")), _number(efficiency.get("time_efficiency"))
        section: dict[str, Any] = {"tokens_used": used, "token_budget": budget, "elapsed_seconds": elapsed, "wall_seconds": wall,
                   "token_efficiency": tokens, "time_efficiency": time}
        if used is not None and tokens is not None:
            section["token_arithmetic"] = (f"1 − {used:,.0f} / {budget:,.0f} = {_figure(tokens)}" if budget
                                           else f"no token budget: {_figure(tokens)}")
        if elapsed is not None and time is not None:
            section["time_arithmetic"] = (f"1 − {_seconds(elapsed)} s / {wall:,.0f} s = {_figure(time)}" if wall
                                          else f"no time limit: {_figure(time)}")
        if tokens is not None and time is not None:
            section["arithmetic"] = f"({_figure(tokens)} + {_figure(time)}) / 2 = {_figure((tokens + time) / 2)}"
        sections["efficiency"] = section

    policy = _dict(details.get("policy"))
    weights = {name: number for name, value in _in_score_order(_dict(policy.get("weights")))
               if (number := _number(value)) is not None}
    overall = None
    if policy:
        scores = {"accuracy": evaluation.accuracy, "completeness": evaluation.completeness,
                  "efficiency": evaluation.efficiency}
        rows: list[dict[str, Any]] = [
            {"score": name, "weight": weight, "value": value, "product": weight * value}
            for name, weight in weights.items() if (value := scores.get(name)) is not None]  # of the scores measured
        total = sum(row["weight"] for row in rows)
        arithmetic = ""
        if rows and total:
            terms = " + ".join(f"{_figure(row['weight'])} × {_figure(row['value'])}" for row in rows)
            arithmetic = (f"{terms} = {_figure(evaluation.overall_score)}" if abs(total - 1) < 1e-9
                          else f"({terms}) / {_figure(total)} = {_figure(evaluation.overall_score)}")
        overall = {"weights": rows, "arithmetic": arithmetic, "pass_score": _number(policy.get("pass_score")),
                   "revise_score": _number(policy.get("revise_score"))}

    return {
        "formulas": formulas,
        "sections": sections,
        "overall": overall,
        "aggregate": evaluation.method == Evaluation.Method.AGGREGATE,
        "gate": gate_summary(details.get("quality_gate")),
        "gate_minimums": [(name, _number(value)) for name, value in
                          _in_score_order(_dict(_dict(details.get("quality_gate")).get("gate")))
                          if _number(value) is not None],
    }


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _label(score: Any) -> str:
    return GATE_LABELS.get(str(score), str(score))


def _figure(value: float) -> str:
    return f"{value:.2f}"


def _minimum(value: float) -> str:
    """A gate's minimum as it was set: 0.8 → 0.80, 0.725 → 0.725."""
    return _figure(value) if round(value, 2) == value else f"{value:g}"


def _seconds(value: float) -> str:
    return f"{value:,.1f}" if value >= 10 else f"{value:.3g}"


def _below(value: float, minimum: float) -> str:
    """A score under its minimum, with as many digits as it takes not to look equal to it."""
    for digits in (2, 3, 4):
        text = f"{value:.{digits}f}"
        if float(text) < minimum:
            return text
    return repr(value)
