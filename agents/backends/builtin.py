"""The `builtin` backend: deterministic, offline behaviours named by skill. Not a model.

Each skill in an agent's `capabilities.skills` that this module knows is a small function
from a `BackendRequest` to a JSON object, computed only from the request's inputs, state
and execution input: the same request always gives the same output, and nothing leaves
the machine. The outputs are meant to be inspected, so they are small, plain and say
where their figures are synthetic.

`choose_skill` is the rule every backend shares for which skill a node run performs.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from executions.engine.context.summary import summarize as summarize_data
from executions.engine.tot.errors import ToTError
from executions.engine.tot.game24 import builtin_roles as game24_roles
from executions.engine.tot.messages import check_message, make_message
from executions.engine.tokens import TokenCounter, get_encoding

from .base import Backend, BackendError, BackendRequest, BackendResponse

ENCODING = "cl100k_base"


def count_tokens(text: str) -> int:
    """Tokens of `text` in cl100k_base (offline); what backends report when a server does not."""
    if not text:
        return 0
    return len(get_encoding(ENCODING).encode(text, disallowed_special=()))


def output_text(output: Any) -> str:
    """The text a JSON output is passed on as (and counted as)."""
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


# --------------------------------------------------------------------------- the skill rule


def choose_skill(request: BackendRequest) -> str:
    """The skill a node run performs: the first of the executing agent's skills
    (`request.skills`) that the node's own agent has too (`request.required_skills`).

    An agent running its own node performs its first skill; a fallback agent runs a node
    only if it shares a skill with the node's agent, else CAPABILITY_GAP (not retryable)."""
    required = set(request.required_skills)
    for skill in request.skills:
        if skill in required:
            return skill
    agent = request.agent_id or "the agent"
    raise BackendError(
        f"{agent} cannot run node {request.node_id or '?'}: the node needs one of the skills "
        f"{_names(request.required_skills)} (its agent's), and {agent} has {_names(request.skills)}",
        code="CAPABILITY_GAP",
        retryable=False,
        details={"missing_skills": list(request.required_skills)},
    )


def _names(skills: list[str]) -> str:
    return "[" + ", ".join(skills) + "]" if skills else "none"


# --------------------------------------------------------------------------- reading inputs

# Keys that describe data rather than hold it (§4.3 reference objects, file reads, §4.2 counts).
_META_KEYS = frozenset({
    "ref_type", "task_id", "path", "table", "format", "encoding", "transfer_mode", "reference",
    "available_paths", "data_stats", "conditions", "select", "order_by", "limit", "omitted_fields",
    "missing_sections", "preview_count", "atom_id", "atom_type", "source_section", "paper_id", "domain",
    "created_at", "updated_at", "relation_id", "record_id",
})
_CONTENT_KEYS = ("content", "content_summary", "content_preview", "claim", "text", "text_preview")


# Inputs that carry the agent's own prompt, not data: the runner passes them as items too.
PROMPT_INPUTS = frozenset({"system_prompt", "task_instructions", "instructions"})


def _data_inputs(request: BackendRequest) -> dict[str, Any]:
    """The named data inputs: not the agent's prompt, nor the engine's own `_`-prefixed
    entries (such as `_batch`)."""
    return {name: value for name, value in request.inputs.items()
            if not str(name).startswith("_") and name not in PROMPT_INPUTS}


def _value(request: BackendRequest, key: str) -> Any:
    """An input by name, else the execution input's, else the state's; None when none has it."""
    for source in (request.inputs, request.execution_input, request.state):
        if isinstance(source, dict) and source.get(key) is not None:
            return source[key]
    return None


def _texts(value: Any) -> list[str]:
    """Every piece of text in a value, in order: strings, string values of dicts (not the
    keys that only describe data) and of lists; a file read by sections comes back as
    markdown with its headings."""
    found: list[str] = []

    def walk(item: Any) -> None:
        if isinstance(item, str):
            if item.strip():
                found.append(item)
        elif isinstance(item, dict):
            sections = item.get("sections")
            if isinstance(sections, dict) and sections:
                for heading, text in sections.items():
                    found.append(f"## {heading}\n\n" + "\n\n".join(_texts(text)))
                return
            for key, inner in item.items():
                if str(key).startswith("_") or key in _META_KEYS:
                    continue
                walk(inner)
        elif isinstance(item, (list, tuple)):
            for inner in item:
                walk(inner)

    walk(value)
    return found


def _text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    return "\n\n".join(text.strip() for text in _texts(value))


def _stable_int(*parts: Any) -> int:
    digest = hashlib.sha256("\x1f".join(output_text(p) for p in parts).encode()).hexdigest()
    return int(digest[:16], 16)


def _as_int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


# --------------------------------------------------------------------------- papers → atoms

_SECTION_TYPES = {
    "methodology": {"methodology", "methods", "method", "approach", "model", "model architecture", "architecture",
                    "training", "experimental setup", "setup", "implementation", "materials and methods"},
    "evidence": {"results", "experiments", "evaluation", "findings", "empirical results", "model variations",
                 "ablation", "ablation study", "ablations"},
    "background": {"introduction", "background", "related work", "prior work", "motivation", "preliminaries"},
    "claim": {"abstract", "conclusion", "conclusions", "discussion", "summary", "future work", "limitations",
              "contributions"},
}
_SKIPPED_SECTIONS = {"references", "bibliography", "acknowledgements", "acknowledgments", "appendix"}
_KNOWN_SECTIONS = set().union(*_SECTION_TYPES.values(), _SKIPPED_SECTIONS)
_MARKDOWN_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_NUMBERING = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[IVXLC]+\.)\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[A-Z0-9])")
_DIGIT = re.compile(r"\d")
_METHOD_CUES = re.compile(r"\b(we (use|train|apply|compute|implement|follow)|is computed|computes|algorithm|procedure|"
                          r"encoder|decoder|layers?|optimi[sz]er|dataset)\b", re.I)
_BACKGROUND_CUES = re.compile(r"\b(has been|have been|previous(ly)?|prior work|traditionally|established|"
                              r"existing)\b", re.I)
_MIN_WORDS = 3
CONFIDENCE_FLOOR = 0.6


def _section_key(heading: str) -> str:
    return _NUMBERING.sub("", heading.strip()).strip().rstrip(":").strip().lower()


def _heading_of(line: str) -> tuple[str, int] | None:
    """(heading, markdown level or 0) when the line is a heading."""
    match = _MARKDOWN_HEADING.match(line)
    if match:
        level = len(line.lstrip()) - len(line.lstrip().lstrip("#"))
        heading = _NUMBERING.sub("", match.group(1)).strip()
        return (heading, level) if heading else None
    stripped = line.strip()
    if len(stripped) <= 60 and _section_key(stripped) in _KNOWN_SECTIONS:
        return _NUMBERING.sub("", stripped).strip().rstrip(":").strip(), 0
    return None


def _sentences(paragraph: str) -> list[str]:
    joined = " ".join(paragraph.split())
    return [s.strip() for s in _SENTENCE_END.split(joined) if len(s.split()) >= _MIN_WORDS]


def read_paper(text: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """(title, [(section, [sentence, ...]), ...]) of a paper's text.

    Headings are markdown headings or lines naming a usual section (Abstract, Introduction,
    Methodology, Results, Conclusion, …, numbered or not), as in text taken from a PDF.
    Lines within a paragraph are joined (a PDF line often ends mid-sentence). Text before
    the first heading is the title when it is one line without a full stop; a level-1
    markdown heading with nothing under it is the title too."""
    blocks: list[tuple[str | None, int, list[str]]] = [(None, 0, [])]
    for line in text.splitlines():
        heading = _heading_of(line)
        if heading is not None:
            blocks.append((heading[0], heading[1], []))
        else:
            blocks[-1][2].append(line.strip())

    title = ""
    sections: list[tuple[str, list[str]]] = []
    has_headings = len(blocks) > 1
    for heading, level, body in blocks:
        non_empty = [line for line in body if line]
        if heading is None:
            if not non_empty:
                continue
            if has_headings and len(non_empty) == 1 and not non_empty[0].endswith((".", "!", "?")):
                title = title or non_empty[0]
                continue
            heading = "Preamble" if has_headings else "Text"
        if not non_empty:
            if level == 1 and not title:
                title = heading
            continue
        if _section_key(heading) in _SKIPPED_SECTIONS:
            continue
        paragraphs, current = [], []
        for line in body:
            if line:
                current.append(line)
            elif current:
                paragraphs.append(" ".join(current))
                current = []
        if current:
            paragraphs.append(" ".join(current))
        sentences = [s for paragraph in paragraphs for s in _sentences(paragraph)]
        if sentences:
            sections.append((heading, sentences))
    return title, sections


def atom_type_of(section: str, sentence: str) -> str:
    """methodology / evidence by the section; a figure makes evidence; then the section's
    type (Introduction → background, Abstract/Conclusion → claim); else by cue words."""
    key = _section_key(section)
    if key in _SECTION_TYPES["methodology"]:
        return "methodology"
    if key in _SECTION_TYPES["evidence"] or _DIGIT.search(sentence):
        return "evidence"
    if key in _SECTION_TYPES["background"]:
        return "background"
    if key in _SECTION_TYPES["claim"]:
        return "claim"
    if _METHOD_CUES.search(sentence):
        return "methodology"
    if _BACKGROUND_CUES.search(sentence):
        return "background"
    return "claim"


def confidence_of(content: str) -> float:
    """A stable pseudo-confidence in 0.60–0.99 from the content's hash (not a judgement)."""
    return round(CONFIDENCE_FLOOR + (_stable_int("confidence", content) % 40) / 100, 2)


def extract_atoms(request: BackendRequest) -> dict:
    inputs = _data_inputs(request)
    texts = _texts(inputs)
    title, sections, sentences = "", [], []
    for text in texts:
        found_title, found = read_paper(text)
        title = title or found_title
        for section, section_sentences in found:
            if section not in sections:
                sections.append(section)
            sentences += [(section, s) for s in section_sentences]
    # Stay within the output budget: a real model could not write more either.
    budget = max(200, request.max_output_tokens - 200)
    atoms: list[dict] = []
    for number, (section, sentence) in enumerate(sentences, start=1):
        atom = {
            "atom_id": f"atom_{number:03d}",
            "atom_type": atom_type_of(section, sentence),
            "content": sentence,
            "confidence": confidence_of(sentence),
            "source_section": section,
        }
        budget -= count_tokens(json.dumps(atom, ensure_ascii=False)) + 1
        if budget < 0:
            break
        atoms.append(atom)
    metadata: dict[str, Any] = {
        "sections": [s for s in sections if any(a["source_section"] == s for a in atoms)],
        "atom_count": len(atoms),
        "sources": list(inputs),
    }
    if title:
        metadata["title"] = title
    if len(atoms) < len(sentences):
        metadata["note"] = f"kept the first {len(atoms)} of {len(sentences)} sentences to fit {request.max_output_tokens} output tokens"
    if not sentences:
        metadata["note"] = "no text with sentences in the inputs"
    return {"atoms": atoms, "metadata": metadata}


# --------------------------------------------------------------------------- atoms in inputs


def _is_validation(item: dict) -> bool:
    return "atom_id" in item and isinstance(item.get("valid"), bool)


def _content_of(item: dict) -> str:
    for key in _CONTENT_KEYS:
        if isinstance(item.get(key), str):
            return item[key]
    return ""


def _walk_dicts(value: Any, take: Callable[[dict], bool]) -> None:
    """Visit the dicts in a value, outermost first; `take` returns True when it used a dict,
    and then its insides are not visited. Keys starting with `_` are not entered."""
    if isinstance(value, dict):
        if take(value):
            return
        for key, inner in value.items():
            if not str(key).startswith("_"):
                _walk_dicts(inner, take)
    elif isinstance(value, (list, tuple)):
        for inner in value:
            _walk_dicts(inner, take)


def find_atoms(value: Any) -> list[dict]:
    """Atom-like dicts anywhere in a value (lists of atoms, §4.2 `*_summary` lists, §4.3
    previews), as {"atom_id", "atom_type", "content", "confidence"}; first of each id wins."""
    found: dict[str, dict] = {}

    def take(item: dict) -> bool:
        if _is_validation(item):
            return True
        content = _content_of(item)
        if "atom_id" in item or (content and not any(isinstance(v, (dict, list)) for v in item.values())):
            atom_id = str(item.get("atom_id") or f"item_{len(found) + 1:03d}")
            found.setdefault(atom_id, {
                "atom_id": atom_id,
                "atom_type": item.get("atom_type", ""),
                "content": content,
                "confidence": _number(item.get("confidence")),
            })
            return True
        return False

    _walk_dicts(value, take)
    return list(found.values())


def find_validations(value: Any) -> dict[str, bool]:
    """atom_id → valid, from validation results anywhere in a value."""
    found: dict[str, bool] = {}

    def take(item: dict) -> bool:
        if _is_validation(item):
            found.setdefault(str(item["atom_id"]), item["valid"])
            return True
        return False

    _walk_dicts(value, take)
    return found


VALID_CONFIDENCE = 0.7


def _validation(atom: dict) -> dict:
    confidence = atom["confidence"]
    figure = re.search(r"\d+(?:[.,]\d+)*", atom["content"])
    if confidence is not None and confidence >= VALID_CONFIDENCE:
        valid, note = True, f"confidence {confidence:.2f} ≥ {VALID_CONFIDENCE:.2f}"
    elif figure:
        valid, note = True, f"states a figure ({figure.group(0)}) that can be checked"
    elif confidence is None:
        valid, note = False, "no confidence given and no figure to check it against"
    else:
        valid, note = False, f"confidence {confidence:.2f} < {VALID_CONFIDENCE:.2f} and no figure to check it against"
    return {"atom_id": atom["atom_id"], "valid": valid, "note": note}


def validate_atoms(request: BackendRequest) -> dict:
    inputs = _data_inputs(request)
    atoms = find_atoms(inputs)
    if not atoms:  # plain text (a summary that became text): each sentence is a claim
        sentences = [s for text in _texts(inputs) for _, found in read_paper(text)[1] for s in found]
        atoms = [{"atom_id": f"claim_{n:03d}", "atom_type": "claim", "content": s, "confidence": None}
                 for n, s in enumerate(sentences, start=1)]
    results = [_validation(atom) for atom in atoms]
    valid = sum(1 for result in results if result["valid"])
    return {"validation_results": results, "valid_count": valid, "invalid_count": len(results) - valid}


def integrate_atoms(request: BackendRequest) -> dict:
    inputs = _data_inputs(request)
    verdicts = find_validations(inputs)
    integrated, rejected, by_type = [], [], {}
    for atom in find_atoms(inputs):
        if verdicts.get(atom["atom_id"]) is False:
            rejected.append(atom["atom_id"])
            continue
        integrated.append(atom["atom_id"])
        kind = atom["atom_type"] or "unknown"
        by_type[kind] = by_type.get(kind, 0) + 1
    output: dict[str, Any] = {
        "integrated_atoms": integrated,
        "vault_size": len(integrated),
        "by_type": dict(sorted(by_type.items())),
        "rejected_atoms": rejected,
        "sources": list(inputs),
    }
    if request.inputs.get("_batch") is not None:
        output["batch"] = request.inputs["_batch"]
    return output


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
    repository = _text_of(_value(request, "repository")) or _text_of(_data_inputs(request)) or "unnamed repository"
    repository = repository.splitlines()[0][:200]
    rng = random.Random(_stable_int(skill, repository))
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


def synthesize_report(request: BackendRequest) -> dict:
    inputs = _data_inputs(request)
    lines = ["# Synthesis report", ""]
    scores: list[float] = []
    finding_count = 0
    for name, value in inputs.items():
        lines.append(f"## {name}")
        score = _find_key(value, "score")
        if _number(score) is not None:
            scores.append(_number(score))
            lines.append(f"- score: {_number(score):g}/10")
        findings = _find_key(value, "findings")
        if isinstance(findings, list):
            finding_count += len(findings)
            lines.append(f"- findings: {len(findings)}")
            lines += [f"  - [{f.get('severity', '?')}] {f.get('location', '?')}: {f.get('message', '')}"
                      for f in findings[:3] if isinstance(f, dict)]
        texts = sorted(_texts(value), key=len, reverse=True)
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


def _rounds(request: BackendRequest) -> int:
    return max(0, _as_int(request.state.get("rounds"), 0))


def draft(request: BackendRequest) -> dict:
    topic = _text_of(_value(request, "topic")) or "this release"
    feedback = _text_of(request.inputs.get("feedback") or request.state.get("feedback"))
    number = _rounds(request) + 1
    rng = random.Random(_stable_int("draft", topic))
    areas = rng.sample(["performance", "reliability", "the API", "the command line", "documentation", "security"], 3)
    lines = [
        f"Release notes for {topic}",
        "",
        f"- Improves {areas[0]}.",
        f"- Fixes issues in {areas[1]}.",
        f"- Updates {areas[2]}.",
    ]
    if feedback:
        lines += ["", f"Revised after review: {feedback}"]
    return {"text": "\n".join(lines), "round": number}


def review(request: BackendRequest) -> dict:
    rounds = _rounds(request)
    text = _text_of(_value(request, "draft"))
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


PUBLISH_EPOCH = datetime(2026, 2, 3, 12, 0, tzinfo=timezone.utc)


def publish(request: BackendRequest) -> dict:
    text = _text_of(_value(request, "draft"))
    moment = PUBLISH_EPOCH + timedelta(seconds=_stable_int("publish", request.execution_id, request.node_id, text) % 86_400)
    return {
        "published_at": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "channel": "release-notes",
        "status": "published",
        "note": "simulated by the builtin backend: nothing was sent anywhere",
    }


def compliance_check(request: BackendRequest) -> dict:
    text = _text_of(_value(request, "draft"))
    checks = [
        {"check": "a draft is present", "passed": bool(text)},
        {"check": "no placeholder text (TODO, TBD, XXX)", "passed": not re.search(r"\b(TODO|TBD|XXX)\b", text)},
        {"check": "no personal e-mail addresses", "passed": not re.search(r"[\w.+-]+@[\w-]+\.[\w.]+", text)},
    ]
    return {"compliant": all(c["passed"] for c in checks), "checks": checks}


def legal_review(request: BackendRequest) -> dict:
    raise BackendError("legal_review needs the legal_database tool, which no agent here has",
                       code="CAPABILITY_GAP", retryable=False, details={"missing_tools": ["legal_database"]})


# --------------------------------------------------------------------------- orchestration


def plan(request: BackendRequest) -> dict:
    goal = _text_of(_value(request, "goal")) or _text_of(_value(request, "task")) or _text_of(request.execution_input)
    goal = (goal.splitlines() or ["the task in the execution input"])[0][:200]
    names = list(_data_inputs(request))
    steps = [f"read {name}" for name in names] + ["split the goal into tasks for the agents that have the skills",
                                                  "check each result against its contract", "report"]
    return {"goal": goal, "steps": [{"step": n, "action": a} for n, a in enumerate(steps, start=1)]}


def review_escalation(request: BackendRequest) -> dict:
    inputs = _data_inputs(request)
    reason = _find_key(inputs, "error") or _find_key(inputs, "message") or _find_key(inputs, "reason")
    reason = _text_of(reason) or "no reason given"
    return {
        "decision": "hand_to_human",
        "reason": reason[:500],
        "recommendation": "a person should decide: the builtin backend does not resolve escalations",
    }


# --------------------------------------------------------------------------- benchmarking


_PLACEHOLDER = re.compile(r"^\s*(TODO|TBD|XXX|FIXME|lorem ipsum)\b|^\s*(\.\.\.|…)\s*$", re.I)


def judge_outputs(request: BackendRequest) -> dict:
    """A rule-based judge of a run's final outputs (`inputs["outputs"]`, node id → output),
    for the evaluation's accuracy: each output must be present, free of placeholder text
    and not an error object. Score: the share of those checks that hold."""
    outputs = request.inputs.get("outputs") or {}
    if not isinstance(outputs, dict) or not outputs:
        return {"score": 0.0, "feedback": ["no node produced an output"]}
    passed, total, feedback = 0, 0, []
    for node_id, output in outputs.items():
        text = _text_of(output)
        # A value that is a placeholder ("TBD", "TODO: write this"), not one that mentions one.
        placeholder = any(_PLACEHOLDER.match(piece) for piece in _texts(output))
        for holds, problem in (
            (bool(text.strip()), "is empty"),
            (not placeholder, "has a placeholder where a value should be"),
            (not (isinstance(output, dict) and "error" in output and len(output) == 1), "is only an error"),
        ):
            total += 1
            passed += holds
            if not holds:
                feedback.append(f"the output of {node_id} {problem}")
    return {"score": round(passed / total, 4),
            "feedback": feedback or [f"{len(outputs)} output(s) present, without placeholders or errors"],
            "judge": "builtin rules (not a model)"}


def noop(request: BackendRequest) -> dict:
    """Nothing at all: what `benchmark_execution` runs to time the orchestration around a node."""
    return {"ok": True}


# --------------------------------------------------------------------------- Tree of Thoughts

# The request each Game-of-24 role answers, and its reply (tot-protocol 1, 2, 3, 5).
GAME24_ROLES = {
    "game24_decompose": ("decomposer", "decompose_task", "decomposition_result"),
    "game24_generate": ("generator", "generate_thoughts", "generated_thoughts"),
    "game24_evaluate": ("evaluator", "evaluate_thoughts", "evaluation_results"),
    "game24_synthesize": ("synthesizer", "synthesize_solution", "final_solution"),
}


def game24(request: BackendRequest, skill: str) -> dict:
    """A role of a Game-of-24 search (executions/tot.py calls the role's agent with the
    protocol message as `inputs["message"]`): the engine's builtin role, exact arithmetic.
    A request that breaks the protocol is answered with the seed's `error` field
    (INVALID_FORMAT), as the protocol answers any message it cannot take."""
    role, asked, answer = GAME24_ROLES[skill]
    message = request.inputs.get("message")
    if not isinstance(message, dict):
        raise BackendError(f"{skill} answers a Tree-of-Thoughts `{asked}` message (inputs['message']); "
                           "this node run has none: the skill is meant for a role of a search",
                           code="BAD_INPUT", retryable=False)
    try:
        check_message(message, asked)
        return game24_roles()[role](message)
    except ToTError as error:
        to = message.get("from") if isinstance(message.get("from"), str) and message.get("from") else "explorer"
        task_id = message.get("task_id") if isinstance(message.get("task_id"), str) else ""
        return make_message(role, to, answer, {}, task_id, error=error)


# --------------------------------------------------------------------------- the backend

Skill = Callable[[BackendRequest], dict]
SKILLS: dict[str, Skill] = {
    "extract_atoms": extract_atoms,
    "validate_atoms": validate_atoms,
    "integrate_atoms": integrate_atoms,
    "analyze_code": lambda request: analyze(request, "analyze_code"),
    "analyze_docs": lambda request: analyze(request, "analyze_docs"),
    "analyze_tests": lambda request: analyze(request, "analyze_tests"),
    "synthesize_report": synthesize_report,
    "draft": draft,
    "review": review,
    "publish_unreliable": publish_unreliable,
    "publish": publish,
    "compliance_check": compliance_check,
    "legal_review": legal_review,
    "plan": plan,
    "review_escalation": review_escalation,
    "noop": noop,
    "judge_outputs": judge_outputs,
    **{skill: (lambda request, skill=skill: game24(request, skill)) for skill in GAME24_ROLES},
}
# The search itself (orchestrator and explorer) is the node run, not a backend: executions/tot.py.
SEARCH_SKILLS = ("tot_orchestrate", "tot_explore")


class BuiltinBackend(Backend):
    name = "builtin"
    label = "builtin (deterministic, offline; not a model)"

    def __init__(self, name: str = "builtin"):
        self.name = name

    def complete(self, request: BackendRequest) -> BackendResponse:
        skill = choose_skill(request)
        perform = SKILLS.get(skill)
        if perform is None:
            if skill in SEARCH_SKILLS:
                raise BackendError(f"{skill} is not a backend's skill: a node whose agent has tot_orchestrate runs a "
                                   "Tree-of-Thoughts search, in which the search plays the orchestrator and the "
                                   "explorer", code="NOT_IMPLEMENTED", retryable=False)
            raise BackendError(
                f"the builtin backend has no behaviour for skill {skill!r} (it performs {', '.join(SKILLS)})",
                code="UNKNOWN_SKILL", retryable=False,
            )
        output = perform(request)
        text = output_text(output)
        return BackendResponse(
            output=output,
            tokens_in=count_tokens(request.system_prompt) + count_tokens(request.prompt),
            tokens_out=count_tokens(text),
            backend=self.name,
            model="builtin",
            text=text,
        )

    def summarize(self, text: str, target_tokens: int, *, model: str = "") -> str:
        """An extractive summary (the builtin writes nothing of its own)."""
        summary = summarize_data(text, target_tokens=target_tokens, counter=TokenCounter(ENCODING), strategy="extractive")
        return output_text(summary.content)
