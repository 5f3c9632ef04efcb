"""The builtin skills only the demo's agents perform, registered with the builtin backend by
`DemoConfig.ready()`: without the demo app the builtin refuses them as unknown skills.

They script what the demo shows rather than do work of their own: analyses of a repository
with synthetic figures (seeded by its name, so the same run gives the same report, long
enough for compression to act on), a report over those analyses, a release review that asks
for one revision and then accepts, a publisher that always fails (so the run retries and
falls back) and one that only pretends, a legal review nobody can do (so the run escalates),
and an orchestrator that plans and hands escalations to a person.
"""
from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from agents.backends.base import BackendError, BackendRequest, ToolRequest
from agents.backends.builtin import Skill, as_number, data_inputs, input_value, stable_int, text_of, texts_in
from demo.paper_skills import PAPER_SKILLS

# --------------------------------------------------------------------------- analyses

_MODULES = ["core", "api", "models", "storage", "cli", "auth", "config", "scheduler", "io", "cache", "events",
            "plugins", "reports", "search", "sync", "billing", "admin", "metrics", "workers", "parsers",
            "exports", "imports", "notifications", "permissions"]
_ANALYSES = {
    "analyze_code": "Code analysis",
    "analyze_docs": "Documentation analysis",
    "analyze_tests": "Test suite analysis",
}


def _module_lines(skill: str, module: str, rng: random.Random) -> tuple[list[str], list[dict]]:
    findings: list[dict] = []
    if skill == "analyze_code":
        loc, functions = rng.randint(120, 2400), rng.randint(6, 80)
        complexity, duplicates, todos = rng.uniform(1.5, 9.5), rng.randint(0, 6), rng.randint(0, 12)
        longest = rng.randint(20, 220)
        lines = [
            f"- {module}/__init__.py and {rng.randint(2, 9)} other files: {loc} lines, {functions} functions",
            f"- mean cyclomatic complexity {complexity:.1f}; highest {complexity * rng.uniform(2, 4):.0f} in {module}.{rng.choice(['run', 'load', 'handle', 'parse', 'apply'])}",
            f"- longest function: {longest} lines",
            f"- duplicated blocks: {duplicates}",
            f"- TODO/FIXME markers: {todos}",
            f"- imports {rng.randint(1, 7)} internal modules, {rng.randint(0, 5)} third-party packages",
        ]
        if complexity > 7:
            findings.append({"severity": "high", "location": module, "message": f"mean complexity {complexity:.1f} is high"})
        if longest > 150:
            findings.append({"severity": "medium", "location": module, "message": f"a {longest}-line function should be split"})
        if duplicates >= 4:
            findings.append({"severity": "low", "location": module, "message": f"{duplicates} duplicated blocks"})
    elif skill == "analyze_docs":
        public = rng.randint(5, 60)
        covered = rng.randint(public // 3, public)
        docstrings, stale = rng.randint(30, 100), rng.randint(0, 5)
        lines = [
            f"- docs/{module}.md: {rng.randint(1, 12)} sections",
            f"- covers {covered} of {public} public names ({100 * covered // public}%)",
            f"- docstrings on {docstrings}% of functions",
            f"- examples: {rng.randint(0, 9)} runnable, {stale} stale",
            f"- last updated {rng.randint(0, 90)} commits behind the code",
            f"- broken links: {rng.randint(0, 3)}",
        ]
        if covered * 2 < public:
            findings.append({"severity": "high", "location": f"docs/{module}.md", "message": f"only {covered} of {public} public names documented"})
        if stale >= 3:
            findings.append({"severity": "medium", "location": f"docs/{module}.md", "message": f"{stale} stale examples"})
        if docstrings < 50:
            findings.append({"severity": "low", "location": module, "message": f"docstrings on only {docstrings}% of functions"})
    else:
        tests, failing, skipped = rng.randint(4, 160), rng.choice([0, 0, 0, 1, 2]), rng.randint(0, 6)
        coverage, flaky = rng.randint(45, 99), rng.choice([0, 0, 1, 3])
        lines = [
            f"- tests/test_{module}.py: {tests} tests ({failing} failing, {skipped} skipped)",
            f"- line coverage {coverage}%, branch coverage {max(0, coverage - rng.randint(3, 20))}%",
            f"- slowest test: test_{module}_{rng.choice(['roundtrip', 'load', 'retry', 'limits', 'sync'])} ({rng.uniform(0.05, 4.0):.2f}s)",
            f"- flaky in the last 50 runs: {flaky}",
            f"- fixtures: {rng.randint(1, 14)}, of which {rng.randint(0, 3)} unused",
            f"- assertions per test: {rng.uniform(1.0, 6.0):.1f}",
        ]
        if failing:
            findings.append({"severity": "high", "location": f"tests/test_{module}.py", "message": f"{failing} failing test{'s' if failing > 1 else ''}"})
        if coverage < 60:
            findings.append({"severity": "medium", "location": module, "message": f"line coverage only {coverage}%"})
        if flaky:
            findings.append({"severity": "low", "location": f"tests/test_{module}.py", "message": f"{flaky} flaky test{'s' if flaky > 1 else ''}"})
    return lines, findings


def analyze(request: BackendRequest, skill: str) -> dict:
    repository = text_of(input_value(request, "repository")) or text_of(data_inputs(request)) or "unnamed repository"
    repository = repository.splitlines()[0][:200]
    rng = random.Random(stable_int(skill, repository))
    target = rng.randint(68, 120)  # lines, the summary's four included; a block is 8
    title = f"{_ANALYSES[skill]} of {repository}"
    lines = [title, "=" * len(title), "",
             "Figures are synthetic: made by the builtin backend (deterministic, offline; not a model).", ""]
    findings: list[dict] = []
    modules = rng.sample(_MODULES, len(_MODULES))
    index = 0
    while len(lines) + 8 <= target - 4:
        module = modules[index % len(modules)] + ("" if index < len(modules) else f"_{index // len(modules) + 1}")
        index += 1
        block, found = _module_lines(skill, module, rng)
        lines += [f"## {module}", *block, ""]
        findings += found
    severity = {"high": 0, "medium": 1, "low": 2}
    findings.sort(key=lambda f: severity[f["severity"]])
    score = round(max(1.0, 9.6 - 0.6 * sum(f["severity"] == "high" for f in findings)
                      - 0.25 * sum(f["severity"] == "medium" for f in findings) - 0.05 * len(findings)), 1)
    lines += ["Summary", f"- modules analysed: {index}",
                                   f"- findings: {len(findings)}", f"- score: {score}/10"]
    return {"repository": repository, "analysis": "\n".join(lines), "findings": findings, "score": score}


def analyze_code(request: BackendRequest) -> dict:
    return analyze(request, "analyze_code")


def analyze_docs(request: BackendRequest) -> dict:
    return analyze(request, "analyze_docs")


def analyze_tests(request: BackendRequest) -> dict:
    return analyze(request, "analyze_tests")


def synthesize_report(request: BackendRequest) -> dict:
    inputs = data_inputs(request)
    lines = ["# Synthesis report", ""]
    scores: list[float] = []
    finding_count = 0
    for name, value in inputs.items():
        lines.append(f"## {name}")
        score = _find_key(value, "score")
        if (number := as_number(score)) is not None:
            scores.append(number)
            lines.append(f"- score: {as_number(score):g}/10")
        findings = _find_key(value, "findings")
        if isinstance(findings, list):
            finding_count += len(findings)
            lines.append(f"- findings: {len(findings)}")
            lines += [f"  - [{f.get('severity', '?')}] {f.get('location', '?')}: {f.get('message', '')}"
                      for f in findings[:3] if isinstance(f, dict)]
        texts = sorted(texts_in(value), key=len, reverse=True)
        excerpt = [line.strip() for line in (texts[0].splitlines() if texts else []) if line.strip()]
        excerpt = [line for line in excerpt if not set(line) <= {"=", "-"}][:5]
        lines += [f"> {line}" for line in excerpt] or ["> (no text)"]
        lines.append("")
    overall = round(sum(scores) / len(scores), 1) if scores else None
    lines.append(f"Overall: {len(inputs)} inputs, {finding_count} findings"
                 + (f", mean score {overall}/10" if overall is not None else ""))
    return {"report": "\n".join(lines), "sections": list(inputs), "overall_score": overall}


def _find_key(value: Any, key: str) -> Any:
    """The first value under `key` in a nested value (breadth first), or None."""
    queue = [value]
    while queue:
        item = queue.pop(0)
        if isinstance(item, dict):
            if key in item:
                return item[key]
            queue += list(item.values())
        elif isinstance(item, list):
            queue += item
    return None


# --------------------------------------------------------------------------- release review


def _as_int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _rounds(request: BackendRequest) -> int:
    return max(0, _as_int(request.state.get("rounds"), 0))


def _rejection(request: BackendRequest) -> str:
    """Why a person rejected the last draft at a gate (the run's `gate_feedback`), as the
    redraft quotes it; "" when no gate rejected it."""
    decided = request.inputs.get("gate_feedback") or request.state.get("gate_feedback")
    if not isinstance(decided, dict) or decided.get("decision") != "reject":
        return ""
    who = "its time-out" if decided.get("timed_out") else decided.get("decided_by") or "a person"
    comment = text_of(decided.get("comment"))
    return f"Revised after {who} rejected it: {comment}" if comment else f"Revised after {who} rejected it (no comment)"


def draft(request: BackendRequest) -> dict:
    topic = text_of(input_value(request, "topic")) or "this release"
    rejection = _rejection(request)
    # A person's rejection answers the reviewer's earlier comments: the redraft quotes the person.
    feedback = "" if rejection else text_of(request.inputs.get("feedback") or request.state.get("feedback"))
    number = _rounds(request) + 1
    rng = random.Random(stable_int("draft", topic))
    areas = rng.sample(["performance", "reliability", "the API", "the command line", "documentation", "security"], 3)
    lines = [
        f"Release notes for {topic}",
        "",
        f"- Improves {areas[0]}.",
        f"- Fixes issues in {areas[1]}.",
        f"- Updates {areas[2]}.",
    ]
    if rejection:
        lines += ["", rejection]
    elif feedback:
        lines += ["", f"Revised after review: {feedback}"]
    return {"text": "\n".join(lines), "round": number}


def review(request: BackendRequest) -> dict:
    rounds = _rounds(request)
    text = text_of(input_value(request, "draft"))
    words = len(text.split())
    if rounds < 1:
        verdict = "revise"
        comments = (f"Round {rounds + 1}: the draft ({words} words) should open with what users will notice "
                    "and name any breaking change.")
    else:
        verdict = "accept"
        comments = f"Round {rounds + 1}: the revised draft ({words} words) addresses the earlier comments; ready to publish."
    return {"verdict": verdict, "comments": comments, "round": rounds + 1}


def publish_unreliable(request: BackendRequest) -> dict:
    raise BackendError(
        f"publishing failed on attempt {request.attempt} (publish_unreliable fails every time, "
        "so that the run retries and then falls back)",
        code="PUBLISH_FAILED",
        retryable=True,
    )


PUBLISH_EPOCH = datetime(2026, 2, 3, 12, 0, tzinfo=UTC)


def publish(request: BackendRequest) -> dict:
    text = text_of(input_value(request, "draft"))
    moment = PUBLISH_EPOCH + timedelta(seconds=stable_int("publish", request.execution_id, request.node_id, text) % 86_400)
    return {
        "published_at": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "channel": "release-notes",
        "status": "published",
        "note": "simulated by the builtin backend: nothing was sent anywhere",
    }


def compliance_check(request: BackendRequest) -> dict:
    text = text_of(input_value(request, "draft"))
    checks = [
        {"check": "a draft is present", "passed": bool(text)},
        {"check": "no placeholder text (TODO, TBD, XXX)", "passed": not re.search(r"\b(TODO|TBD|XXX)\b", text)},
        {"check": "no personal e-mail addresses", "passed": not re.search(r"[\w.+-]+@[\w-]+\.[\w.]+", text)},
    ]
    return {"compliant": all(c["passed"] for c in checks), "checks": checks}


def legal_review(request: BackendRequest) -> dict:
    raise BackendError("legal_review needs the legal_database tool, which no agent here has",
                       code="CAPABILITY_GAP", retryable=False, details={"missing_tools": ["legal_database"]})

# --------------------------------------------------------------------------- research with a tool

SEARCH_TOOL = "builtin.knowledge_search"
RESEARCH_ATOMS = 3  # the atoms an answer is built from, at most


def _question(request: BackendRequest) -> str:
    """The task's terms: the `question` (else `query`, `topic`) of the node's inputs or the
    run's input, on one line."""
    for key in ("question", "query", "topic"):
        text = text_of(input_value(request, key))
        if text:
            return " ".join(text.split())[:1000]
    return ""


def _search_results(request: BackendRequest) -> list[dict[str, Any]]:
    """The transcript's results of the search tool, oldest first."""
    return [message for message in request.transcript
            if message.get("role") == "tool" and message.get("name") == SEARCH_TOOL]


def _content(message: dict[str, Any]) -> Any:
    """A tool result's content as a value: the loop may give it as the value or as its JSON text."""
    content = message.get("content")
    if isinstance(content, str):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content


def research(request: BackendRequest) -> dict | ToolRequest:
    """Answer a question from the knowledge base, through the knowledge_search tool.

    Without the tool among those the agent may call, it cannot: a CAPABILITY_GAP naming the
    tool (which is what raises a derive request for an agent that has it). With it, the first
    turn asks for one search with the question's words; the next answers from the atoms the
    search returned, citing them, and says so plainly when the search failed or found nothing:
    it never makes an answer up."""
    if SEARCH_TOOL not in {tool.get("name") for tool in request.tools}:
        raise BackendError(f"research needs the {SEARCH_TOOL} tool, which this agent may not call",
                           code="CAPABILITY_GAP", retryable=False, details={"missing_tools": [SEARCH_TOOL]})
    question = _question(request)
    results = _search_results(request)
    if not results:
        if not question:
            raise BackendError("research needs a question: the run's input has no `question`",
                               code="BAD_INPUT", retryable=False)
        return ToolRequest([{"name": SEARCH_TOOL, "arguments": {"query": question, "limit": RESEARCH_ATOMS}}])
    last = results[-1]
    content = _content(last)
    listed = content.get("atoms") if isinstance(content, dict) else None
    atoms = [atom for atom in listed or [] if isinstance(atom, dict) and atom.get("content")][:RESEARCH_ATOMS]
    if last.get("status") != "success" or not atoms:
        if last.get("status") != "success":
            error = content.get("error") if isinstance(content, dict) else None
            message = text_of(error.get("message") if isinstance(error, dict) else content)
            why = f"the search failed ({last.get('status')}: {message[:300]})"
        elif listed is None:  # the loop passed the result as a summary or a reference
            why = "the search's result came as a summary or a reference, with no atoms to cite"
        else:
            why = "the search found no atom holding its words"
        return {"answer": f"Nothing was found in the knowledge base for {question!r}: {why}.",
                "sources": [], "searched": question, "note": "builtin: not a model"}
    answer = " ".join(f"{atom['content'].strip()} [{atom.get('atom_id', '?')}]" for atom in atoms)
    return {"answer": answer, "sources": [atom.get("atom_id") for atom in atoms], "searched": question,
            "note": "builtin: not a model"}


# --------------------------------------------------------------------------- orchestration


def plan(request: BackendRequest) -> dict:
    goal = text_of(input_value(request, "goal")) or text_of(input_value(request, "task")) or text_of(request.execution_input)
    goal = (goal.splitlines() or ["the task in the execution input"])[0][:200]
    names = list(data_inputs(request))
    steps = [f"read {name}" for name in names] + ["split the goal into tasks for the agents that have the skills",
                                                  "check each result against its contract", "report"]
    return {"goal": goal, "steps": [{"step": n, "action": a} for n, a in enumerate(steps, start=1)]}


def review_escalation(request: BackendRequest) -> dict:
    inputs = data_inputs(request)
    reason = _find_key(inputs, "error") or _find_key(inputs, "message") or _find_key(inputs, "reason")
    reason = text_of(reason) or "no reason given"
    return {
        "decision": "hand_to_human",
        "reason": reason[:500],
        "recommendation": "a person should decide: the builtin backend does not resolve escalations",
    }


DEMO_SKILLS: dict[str, Skill] = {
    "analyze_code": analyze_code,
    "analyze_docs": analyze_docs,
    "analyze_tests": analyze_tests,
    "synthesize_report": synthesize_report,
    "draft": draft,
    "review": review,
    "publish_unreliable": publish_unreliable,
    "publish": publish,
    "compliance_check": compliance_check,
    "legal_review": legal_review,
    "plan": plan,
    "review_escalation": review_escalation,
    "research": research,
    **PAPER_SKILLS,
}
