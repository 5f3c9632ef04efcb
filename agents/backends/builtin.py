"""The `builtin` backend: deterministic, offline behaviours named by skill. Not a model.

Each skill in an agent's `capabilities.skills` that this module knows is a small function
from a `BackendRequest` to a JSON object, computed only from the request's inputs, state
and execution input: the same request always gives the same output, and nothing leaves
the machine. The outputs are meant to be inspected, so they are small, plain and say
where their figures are synthetic.

It holds the skills the product itself needs (the §7.1 reading chain, the judge, `noop` for
benchmarks, the Game-of-24 roles) and extractive summaries for compression. Another app
adds its own with `register_skill` (the demo app registers the skills only its agents
perform); the helpers such skills read a request with are public here.

`choose_skill` is the rule every backend shares for which skill a node run performs.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from typing import Any, Callable

from engine.context.summary import summarize as summarize_data
from engine.tot.errors import ToTError
from engine.tot.game24 import builtin_roles as game24_roles
from engine.tot.messages import check_message, make_message
from engine.tokens import DEFAULT_ENCODING, TokenCounter, get_encoding

from .base import Backend, BackendError, BackendRequest, BackendResponse
from .metering import counting_encoding, record_call


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Tokens of `text` in `encoding` (offline); what backends report when a server does not.
    A call is counted in its model's encoding (metering.counting_encoding says which)."""
    if not text:
        return 0
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


def output_text(output: Any) -> str:
    """The text a JSON output is passed on as (and counted as)."""
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


# --------------------------------------------------------------------------- the skill rule


# What a node whose agent has no skills is answered with: it asks for no skill in particular.
NO_SKILL = "respond"


def choose_skill(request: BackendRequest) -> str:
    """The skill a node run performs: the first of the executing agent's skills
    (`request.skills`) that the node's own agent has too (`request.required_skills`).

    An agent running its own node performs its first skill; a fallback agent runs a node
    only if it shares a skill with the node's agent, else CAPABILITY_GAP (not retryable).
    A node whose agent has no skills needs none: whoever runs it answers it (`respond`)."""
    if not request.required_skills:
        return NO_SKILL
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


def data_inputs(request: BackendRequest) -> dict[str, Any]:
    """The named data inputs: not the agent's prompt, nor the engine's own `_`-prefixed
    entries (such as `_batch`)."""
    return {name: value for name, value in request.inputs.items()
            if not str(name).startswith("_") and name not in PROMPT_INPUTS}


def input_value(request: BackendRequest, key: str) -> Any:
    """An input by name, else the execution input's, else the state's; None when none has it."""
    for source in (request.inputs, request.execution_input, request.state):
        if isinstance(source, dict) and source.get(key) is not None:
            return source[key]
    return None


def texts_in(value: Any) -> list[str]:
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
                    found.append(f"## {heading}\n\n" + "\n\n".join(texts_in(text)))
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


def text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    return "\n\n".join(text.strip() for text in texts_in(value))


def stable_int(*parts: Any) -> int:
    digest = hashlib.sha256("\x1f".join(output_text(p) for p in parts).encode()).hexdigest()
    return int(digest[:16], 16)


def as_number(value: Any) -> float | None:
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
    return round(CONFIDENCE_FLOOR + (stable_int("confidence", content) % 40) / 100, 2)


def extract_atoms(request: BackendRequest) -> dict:
    inputs = data_inputs(request)
    texts = texts_in(inputs)
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
        budget -= count_tokens(json.dumps(atom, ensure_ascii=False), request.encoding or DEFAULT_ENCODING) + 1
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
                "confidence": as_number(item.get("confidence")),
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
    inputs = data_inputs(request)
    atoms = find_atoms(inputs)
    if not atoms:  # plain text (a summary that became text): each sentence is a claim
        sentences = [s for text in texts_in(inputs) for _, found in read_paper(text)[1] for s in found]
        atoms = [{"atom_id": f"claim_{n:03d}", "atom_type": "claim", "content": s, "confidence": None}
                 for n, s in enumerate(sentences, start=1)]
    results = [_validation(atom) for atom in atoms]
    valid = sum(1 for result in results if result["valid"])
    return {"validation_results": results, "valid_count": valid, "invalid_count": len(results) - valid}


def integrate_atoms(request: BackendRequest) -> dict:
    inputs = data_inputs(request)
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
        text = text_of(output)
        # A value that is a placeholder ("TBD", "TODO: write this"), not one that mentions one.
        placeholder = any(_PLACEHOLDER.match(piece) for piece in texts_in(output))
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


RESPOND_TOKENS = 300  # the length of the digest `respond` gives


def respond(request: BackendRequest) -> dict:
    """An agent with no skills, on the builtin: an extractive digest of what it was given
    (its data inputs, else its task), labelled as such, since the builtin writes nothing of
    its own."""
    text = text_of(data_inputs(request)) or text_of(request.prompt)
    digest = summarize_data(text, target_tokens=RESPOND_TOKENS, counter=TokenCounter(request.encoding or DEFAULT_ENCODING),
                            strategy="extractive")
    return {"response": output_text(digest.content), "inputs": sorted(data_inputs(request)),
            "note": "builtin: not a model; an agent without skills gets an extractive digest of its inputs"}


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
    """A role of a Game-of-24 search (executions/node_kinds/tot.py calls the role's agent with the
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
# The product's own skills; an app adds its own with `register_skill` (the demo app does, from
# its AppConfig.ready()), so this module never imports the apps that use it.
SKILLS: dict[str, Skill] = {
    "extract_atoms": extract_atoms,
    "validate_atoms": validate_atoms,
    "integrate_atoms": integrate_atoms,
    "noop": noop,
    NO_SKILL: respond,
    "judge_outputs": judge_outputs,
    **{skill: (lambda request, skill=skill: game24(request, skill)) for skill in GAME24_ROLES},
}
# The search itself (orchestrator and explorer) is the node run, not a backend: executions/node_kinds/tot.py.
SEARCH_SKILLS = ("tot_orchestrate", "tot_explore")


def register_skill(name: str, perform: Skill) -> Skill:
    """Let the builtin backend perform `name` with `perform`. Registering the same function
    again changes nothing; another function under a name already taken is refused, so an
    app cannot silently replace a skill the product relies on."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a builtin skill is named by a non-empty string, not {name!r}")
    if name in SEARCH_SKILLS:
        raise ValueError(f"{name} is the Tree-of-Thoughts search itself, not a skill a backend performs")
    current = SKILLS.get(name)
    if current is not None and current is not perform:
        raise ValueError(f"the builtin skill {name!r} is already performed by {_qualified(current)}; "
                         f"{_qualified(perform)} cannot replace it")
    SKILLS[name] = perform
    return perform


def _qualified(function: Callable) -> str:
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', repr(function))}"


class BuiltinBackend(Backend):
    name = "builtin"
    label = "builtin (deterministic, offline; not a model)"
    abstractive = False  # its summaries are extractive

    def __init__(self, name: str = "builtin"):
        self.name = name

    def complete(self, request: BackendRequest) -> BackendResponse:
        # The builtin is no model: its tokens are counted in the agent's encoding.
        encoding = counting_encoding(self.name, request.model, request.encoding)
        request = dataclasses.replace(request, encoding=encoding)
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
        tokens_in = count_tokens(request.system_prompt, encoding) + count_tokens(request.prompt, encoding)
        tokens_out = count_tokens(text, encoding)
        record_call(backend=self.name, model="builtin", tokens_in=tokens_in, tokens_out=tokens_out, usage="builtin",
                    encoding=encoding)
        return BackendResponse(output=output, tokens_in=tokens_in, tokens_out=tokens_out, backend=self.name,
                               model="builtin", text=text)

    def summarize(self, text: str, target_tokens: int, *, model: str = "") -> str:
        """An extractive summary (the builtin writes nothing of its own)."""
        summary = summarize_data(text, target_tokens=target_tokens, counter=TokenCounter(DEFAULT_ENCODING),
                                 strategy="extractive")
        return output_text(summary.content)
